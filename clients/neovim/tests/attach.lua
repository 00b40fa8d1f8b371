-- `:Sema attach`: a session another process hosts (a `sema-rpc serve` whose socket client
-- started it) opens in a chat: the earlier conversation drawn, the Write waiting for
-- consent approved through the picker, the turn's end streamed, then a prompt of ours.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

H.picker(function(prompt, labels)
  if prompt == "Attach to a running Sema session" then
    return labels[1]
  end
  for _, label in ipairs(labels) do
    if label == "Allow once" then
      return label
    end
  end
  error("unexpected prompt: " .. prompt .. " " .. vim.inspect(labels))
end)

local attached
local attaches = 0
vim.api.nvim_create_autocmd("User", {
  pattern = "SemaAttached",
  callback = function(ev)
    attached = ev.data
    attaches = attaches + 1
  end,
})

H.run(function()
  H.result.servers = vim.tbl_map(function(s)
    return { pid = s.pid, endpoint = s.endpoint }
  end, require("sema.attach").servers())
  vim.cmd("Sema attach")
  H.wait("the attach", function()
    return attached ~= nil
  end)
  H.result.session_id = attached.sessionId
  H.result.attach_state = attached.result.state
  H.result.pending = #(attached.result.pendingRequests or {})
  H.snapshot("attached")
  H.wait_text("Written the notes.")
  H.wait_text("answered by sema.nvim")
  H.snapshot("approved")
  H.wait("the turn's end", function()
    return H.chat().state == "idle"
  end)
  H.type_input("and now?")
  H.wait_event("SemaPromptDone", 1)
  H.snapshot("end")
  H.result.remote = H.chat().remote ~= nil

  -- detach, then attach again by id: the chat is drawn afresh from the server
  vim.cmd("Sema detach")
  H.wait_text("— detached; the session goes on —")
  vim.cmd("Sema attach " .. attached.sessionId:sub(1, 8))
  H.wait("the second attach", function()
    return attaches == 2
  end)
  H.snapshot("reattached")
end)
