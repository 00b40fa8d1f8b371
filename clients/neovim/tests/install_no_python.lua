-- `:Sema install` with no Python >= 3.11 (nor uv) on PATH: a clear error naming what was
-- found, nothing installed.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local notes = {}
  vim.notify = function(msg, level)
    notes[#notes + 1] = { msg = msg, level = level }
  end
  H.result.notes = notes
  vim.cmd("Sema install")
  H.result.server = require("sema.install").server() or vim.NIL
  local _, why = require("sema.install").resolve()
  H.result.resolve_error = why
end)
