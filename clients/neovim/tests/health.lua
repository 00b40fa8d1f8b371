-- :checkhealth sema, as a user runs it.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  vim.cmd("checkhealth sema")
  H.result.report = vim.api.nvim_buf_get_lines(0, 0, -1, true)
end)
