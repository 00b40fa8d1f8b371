-- :Sema model lists the profiles in the picker; choosing one switches the session's model
-- from its next request.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(prompt, labels)
  if prompt:find("Sema model", 1, true) then
    for _, label in ipairs(labels) do
      if label:find("other", 1, true) then
        return label
      end
    end
  end
  return nil
end)

H.run(function()
  vim.cmd("Sema First question")
  H.wait_event("SemaPromptDone")
  vim.cmd("Sema model")
  H.wait("the model to switch", function()
    return H.chat().info.model == "other"
  end)
  H.result.winbar = vim.wo[H.chat().win].winbar
  vim.cmd("Sema Second question")
  H.wait_event("SemaPromptDone", 2)
  H.snapshot("end")
end)
