-- One Neovim: a chat, then :Sema new, then :Sema resume picking the first chat (still open
-- here) draws its conversation again as a fresh Neovim would, marker and event included.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(_, labels)
  return labels[1]
end)

H.run(function()
  vim.cmd("Sema What is the answer?")
  H.wait_event("SemaPromptDone")
  H.result.session_id = H.chat().session_id
  vim.cmd("Sema new")
  H.wait_event("SemaReady", 2)
  H.result.new_session_id = H.chat().session_id
  vim.cmd("Sema resume")
  H.wait_event("SemaHistoryShown")
  H.result.resumed_session_id = H.chat().session_id
  H.snapshot("history")
end)
