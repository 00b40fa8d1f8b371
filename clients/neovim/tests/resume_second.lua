-- A later Neovim: :Sema resume lists the saved session; picking it continues it.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(_, labels)
  return labels[1]
end)

H.run(function()
  vim.cmd("Sema resume")
  H.wait_event("SemaReady")
  H.type_input("What did I ask?")
  H.wait_event("SemaPromptDone")
  H.snapshot("end")
  H.result.session_id = H.chat().session_id
end)
