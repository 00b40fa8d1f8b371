-- Two Writes approved, :Sema diff, then :Sema rewind to the second message over a file the
-- user changed since (the conflict is confirmed), then :Sema fork from the first message.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(prompt, labels)
  if vim.tbl_contains(labels, "Allow once") then
    return "Allow once"
  elseif prompt:find("rewind to before which message", 1, true) then
    return "Change the notes"
  elseif prompt:find("rewind what", 1, true) then
    return "files and conversation"
  elseif prompt:find("changed since the agent wrote them", 1, true) then
    return "overwrite"
  elseif prompt:find("fork to before which message", 1, true) then
    return "Write the notes"
  end
  error("unexpected prompt: " .. prompt .. " " .. vim.inspect(labels))
end)

H.run(function()
  vim.cmd("Sema Write the notes")
  H.wait_event("SemaPromptDone")
  vim.cmd("Sema Change the notes")
  H.wait_event("SemaPromptDone", 2)
  H.snapshot("written")
  local chat = H.chat()
  H.result.first_session = chat.session_id

  vim.cmd("Sema diff")
  H.result.diff = {
    filetype = vim.bo.filetype,
    lines = vim.api.nvim_buf_get_lines(0, 0, -1, true),
  }
  vim.cmd("tabclose")

  -- the user edits the file after the agent
  vim.fn.writefile({ "mine" }, "notes.txt")
  vim.cmd("Sema rewind")
  H.wait_event("SemaHistoryShown")
  H.snapshot("rewound")
  H.result.rewound_input = vim.api.nvim_buf_get_lines(chat.input, -2, -1, true)[1]
  H.result.notes_after_rewind = vim.fn.readfile("notes.txt")

  vim.cmd("Sema redo")
  H.wait_event("SemaHistoryShown", 2)
  H.snapshot("redone")
  H.result.notes_after_redo = vim.fn.readfile("notes.txt")
  vim.cmd("Sema rewind")
  H.wait_event("SemaHistoryShown", 3)

  vim.cmd("Sema fork")
  H.wait_event("SemaHistoryShown", 4)
  local fork = H.chat()
  H.snapshot("forked")
  H.result.fork_session = fork.session_id
  H.result.fork_input = vim.api.nvim_buf_get_lines(fork.input, -2, -1, true)[1]
end)
