"""What the server keeps on disk for the user, one reader and one writer per file format.

    history/<sessionId>.jsonl     the session history: `history_format` (the lines),
                                  `history_writer` (appends), `history_reader` (loads;
                                  the engine, ACP's `session/load` replay and the HTML
                                  view all read it there), `curated` (the model's view of
                                  it), `seed_json` (the older JSON format, imported),
                                  `listing` (`session/list`, delete)
    history/<sessionId>.title     a title the user gave the session: `titles`
    projects/<key>/input-history.json   what the user typed: `input_history`
    checkpoints/<sessionId>/      what tools did to files: `checkpoint_index` (the index),
                                  `checkpoints` (the store), `checkpoint_scan`,
                                  `checkpoint_hooks` (around each tool call)

Every whole-file write goes through `core.files.write_private`; the append-only files
(the history, the checkpoint index) have their writer here. Nothing is imported here:
import the module you need.
"""
