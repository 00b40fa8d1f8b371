-- A later Neovim: :Sema resume lists the saved session; picking it continues it.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(_, labels)
  return labels[1]
end)

H.run(function()
  vim.cmd("Sema resume")
  H.wait_event("SemaReady")
  -- the earlier conversation, read back from the server
  H.wait_event("SemaHistoryShown")
  H.snapshot("history")
  -- <Up> in the input brings back the project's earlier input
  local chat = H.chat()
  vim.api.nvim_set_current_win(chat.input_win)
  vim.cmd("stopinsert")
  H.type("A<Up><Esc>")
  H.result.history_line = vim.api.nvim_get_current_line()
  vim.api.nvim_buf_set_lines(chat.input, -2, -1, true, { "> " })
  H.type_input("What did I ask?")
  H.wait_event("SemaPromptDone")
  H.snapshot("end")
  H.result.session_id = H.chat().session_id
end)
