-- First Neovim: one exchange, then quit (the session stays on disk).
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  vim.cmd("Sema What is the answer?")
  H.wait_event("SemaPromptDone")
  H.snapshot("answered")
  H.result.session_id = H.chat().session_id
end)
