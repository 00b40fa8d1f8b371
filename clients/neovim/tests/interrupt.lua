-- <C-c> in the chat interrupts a streaming answer, and a consent prompt left open.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function()
  return false -- a picker the user leaves open
end)

local function press_ctrl_c_in_chat()
  vim.api.nvim_set_current_win(H.chat().win)
  vim.cmd("stopinsert")
  H.type("<C-c>")
end

H.run(function()
  H.result.stop_reasons = {}
  vim.cmd("Sema")
  H.wait_event("SemaReady")
  vim.cmd("Sema tell me a long story")
  H.wait_text("First part of a long answer")
  press_ctrl_c_in_chat()
  table.insert(H.result.stop_reasons, H.wait_event("SemaPromptDone", 1).stopReason)
  H.snapshot("after_stream_interrupt")

  vim.cmd("Sema write a file")
  H.wait("the consent picker", function()
    return H.picker_win ~= nil
  end)
  H.result.picker_open_before = vim.api.nvim_win_is_valid(H.picker_win)
  press_ctrl_c_in_chat()
  table.insert(H.result.stop_reasons, H.wait_event("SemaPromptDone", 2).stopReason)
  H.result.picker_closed_after = not vim.api.nvim_win_is_valid(H.picker_win)

  vim.cmd("Sema are you there?")
  table.insert(H.result.stop_reasons, H.wait_event("SemaPromptDone", 3).stopReason)
  H.snapshot("end")
end)
