-- :Sema opens the chat; typed input streams an answer (thinking folded) into the buffer.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  vim.cmd("Sema")
  H.wait_event("SemaReady")
  -- the user types into the input window and presses Enter
  H.type_input("What is this project?")
  local done = H.wait_event("SemaPromptDone")
  H.result.stop_reason = done.stopReason
  H.snapshot("answered")
  local chat = H.chat()
  H.result.thinking_fold_closed = vim.api.nvim_win_call(chat.win, function()
    local lnum = vim.fn.search("^▸ Thinking", "nw")
    return lnum > 0 and vim.fn.foldclosed(lnum) ~= -1
  end)
  H.result.winbar = vim.wo[chat.win].winbar
end)
