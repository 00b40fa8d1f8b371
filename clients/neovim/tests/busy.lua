-- While a turn runs: <C-s> steers it, <CR> queues a follow-up that runs as the next turn.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

local function type_keys(text, key)
  vim.api.nvim_set_current_win(H.chat().input_win)
  vim.cmd("stopinsert")
  H.type("A" .. text .. key)
end

H.run(function()
  vim.cmd("Sema")
  H.wait_event("SemaReady")
  vim.cmd("Sema read the readme")
  H.wait("the turn to run", function()
    return vim.wo[H.chat().win].winbar:find("working", 1, true) ~= nil
  end)
  type_keys("also mention the title", "<C-s>")
  type_keys("and then?", "<CR>")
  H.wait("the follow-up to be queued", function()
    return vim.wo[H.chat().win].winbar:find("1 queued", 1, true) ~= nil
  end)
  H.snapshot("while_busy")
  -- let the model server finish the first response
  local f = assert(io.open(vim.env.SEMA_NVIM_SIGNAL, "w"))
  f:close()
  for n = 1, 3 do
    H.wait_event("SemaPromptDone", n)
  end
  H.snapshot("end")
end)
