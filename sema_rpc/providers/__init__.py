"""Model providers behind one streaming interface (see base.py)."""
