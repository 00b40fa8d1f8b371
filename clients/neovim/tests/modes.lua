-- AskUserQuestion and ExitPlanMode through the picker; Plan mode, permission-mode and
-- sandbox switches (the window bar and the statusline function).
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(prompt, labels)
  if prompt:find("Which database", 1, true) then
    return "SQLite — Small and local"
  elseif prompt == "Sema: the plan is ready" then
    H.result.plan_window = vim.api.nvim_buf_get_name(0)
    return "Start editing (Agent mode, keep the conversation)"
  end
  error("unexpected prompt: " .. prompt .. " " .. vim.inspect(labels))
end)

local function winbar()
  return vim.wo[H.chat().win].winbar
end

H.run(function()
  vim.cmd("Sema")
  H.wait_event("SemaReady")
  vim.cmd("Sema Pick a database for me")
  H.wait_event("SemaPromptDone", 1)

  vim.cmd("Sema mode Plan")
  H.wait("Plan in the window bar", function()
    return winbar():find("Plan", 1, true) ~= nil
  end)
  vim.cmd("Sema plan the change")
  H.wait_event("SemaPromptDone", 2)
  H.result.winbar_after_plan = winbar()
  H.result.windows_after_plan = #vim.api.nvim_tabpage_list_wins(0)

  vim.cmd("Sema permissions acceptEdits")
  H.wait("acceptEdits in the window bar", function()
    return winbar():find("acceptEdits", 1, true) ~= nil
  end)
  vim.cmd("Sema write it quietly")
  H.wait_event("SemaPromptDone", 3)
  H.snapshot("end")

  H.result.statusline_before = require("sema").statusline()
  if not (H.chat().info.sandbox or {}).available then
    return
  end
  vim.cmd("Sema sandbox read-only")
  H.wait("the sandbox in the window bar", function()
    return winbar():find("sandbox:read-only", 1, true) ~= nil
  end)
  H.result.statusline_after = require("sema").statusline()
end)
