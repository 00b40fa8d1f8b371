-- No sema-rpc anywhere: :checkhealth says so, `:Sema install` builds the private server under
-- stdpath("data")/sema, the plugin finds it, :checkhealth reports it, and a prompt is answered.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

local function health()
  vim.cmd("checkhealth sema")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, true)
  vim.cmd("bwipeout!")
  return lines
end

H.run(function()
  local start = vim.uv.hrtime()
  local notes = {}
  vim.notify = function(msg, level)
    notes[#notes + 1] = { msg = msg, level = level }
  end
  H.result.notes = notes
  H.result.report_before = health()

  vim.cmd("Sema install")
  H.result.installed_ms = (vim.uv.hrtime() - start) / 1e6
  local install = require("sema.install")
  local exe, state = install.server()
  H.result.server = exe
  H.result.state = state
  local cmd, source = install.resolve()
  H.result.resolved = { cmd = cmd, source = source }
  H.result.report_after = health()

  vim.cmd("Sema")
  H.wait_event("SemaReady")
  -- the process the plugin started, as the process table shows it
  local f = io.open(("/proc/%d/cmdline"):format(require("sema")._state.client.proc.pid), "rb")
  H.result.server_cmdline = f and f:read("*a"):gsub("%z", " ") or nil
  if f then
    f:close()
  end
  H.type_input("Say hello")
  local done = H.wait_event("SemaPromptDone")
  H.result.answered_ms = (vim.uv.hrtime() - start) / 1e6
  H.result.stop_reason = done.stopReason
  H.snapshot("answered")
end)
