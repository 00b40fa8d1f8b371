-- Two sessions of two servers, each waiting for consent to a Write: each server numbers its
-- own requests, so both requests have the same id. The first one's prompt is open, the
-- second's waits in line; interrupting the second session (its server withdraws its
-- request) leaves the first one's prompt open, and the Write is approved from it.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

local shown = {} -- the consent prompts shown: {labels, items, on_choice, win}
vim.ui.select = function(items, opts, on_choice)
  local labels = {}
  for _, item in ipairs(items) do
    labels[#labels + 1] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  table.insert(H.result.prompts, { prompt = opts.prompt, labels = labels })
  -- a picker's float, left open until the scenario answers (as a user takes their time)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, true, labels)
  local win = vim.api.nvim_open_win(buf, false, {
    relative = "editor", row = 1, col = 1, width = 40, height = #labels, style = "minimal",
  })
  shown[#shown + 1] = { labels = labels, items = items, on_choice = on_choice, win = win }
end

local notified = {}
vim.notify = function(msg)
  notified[#notified + 1] = msg
end

local attaches = 0
vim.api.nvim_create_autocmd("User", {
  pattern = "SemaAttached",
  callback = function()
    attaches = attaches + 1
  end,
})

local function open_ids(chat)
  local ids = {}
  for id in pairs(chat.remote.incoming) do
    ids[#ids + 1] = id
  end
  return ids
end

H.run(function()
  local chats = require("sema")._state.chats
  local a_id, b_id = vim.env.SEMA_TEST_SESSION_A, vim.env.SEMA_TEST_SESSION_B
  vim.cmd("Sema attach " .. a_id)
  H.wait("the first attach", function()
    return attaches == 1
  end)
  H.wait("the first session's consent prompt", function()
    return #shown == 1
  end)
  vim.cmd("Sema attach " .. b_id)
  H.wait("the second attach", function()
    return attaches == 2
  end)
  local a, b = chats[a_id], chats[b_id]
  H.wait("the second session's request", function()
    return #open_ids(b) == 1
  end)
  H.result.ids = { a = open_ids(a), b = open_ids(b) }
  H.result.remotes_differ = a.remote ~= b.remote

  require("sema").interrupt(b)
  H.wait("the second session's request withdrawn", function()
    return #open_ids(b) == 0
  end)
  H.wait_text("[interrupted]") -- the second chat is the current one
  vim.wait(300) -- anything the withdrawal scheduled has run
  H.result.first_prompt_open = vim.api.nvim_win_is_valid(shown[1].win)
  H.result.prompts_shown = #shown
  H.result.notified = notified

  -- the first session's prompt still answers its own request
  local prompt = table.remove(shown, 1)
  if not H.result.first_prompt_open then
    error("the second server's withdrawal closed the first server's prompt")
  end
  vim.api.nvim_win_close(prompt.win, true)
  for i, label in ipairs(prompt.labels) do
    if label == "Allow once" then
      prompt.on_choice(prompt.items[i], i)
    end
  end
  H.wait("the first session's Write answered", function()
    return #open_ids(a) == 0
  end)
  H.wait("the first chat to show the rest of its turn", function()
    return a:text():find("Written a.", 1, true) ~= nil
  end)
  H.result.snapshots.first = a:text()
end)
