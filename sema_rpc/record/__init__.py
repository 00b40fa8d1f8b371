"""Recording and replay of a server run.

- `recorder`: the wire transcript of a run (`--record DIR`) and of each session created
  with `recordDir`; loaded by the server at startup, so it imports nothing heavy.
- `transcript`: the transcript file (`wire.jsonl`): its line format, writing, loading.
- `snapshot`: the saved state a session starts from (meta lines), taken when recording
  and written back into a fresh SEMA_ROOT when replaying.
- `replay`: `sema-rpc replay`, driving a fresh server through `sema_client`;
  `normalise`, `diff` and `paths` (working-dir mapping) serve it.
- `view`: `sema-rpc view`, a recording or a session history as one HTML page.

Nothing here imports the replay half (or `view`) from the recording half.
"""
