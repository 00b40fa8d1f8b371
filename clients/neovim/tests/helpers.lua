--- Shared by the scenario scripts in this folder. Each scenario runs in a real headless
--- Neovim (`nvim --headless -u NONE -l clients/neovim/tests/<scenario>.lua RESULT.json`)
--- that talks to a real sema-rpc; the pytest driver (tests/clients/test_neovim.py) starts
--- the scripted model server, runs the scenario, and asserts on what it wrote to
--- RESULT.json (the chat buffer's text at named moments, prompts shown to the user) and
--- on the workspace's files.
local H = {}

H.result = { snapshots = {}, prompts = {}, notes = {} }
local out_path = assert(_G.arg[1], "usage: nvim -l scenario.lua RESULT.json")

-- the plugin, as a user's config loads it
vim.opt.rtp:prepend(vim.env.SEMA_NVIM_PLUGIN)
vim.cmd("runtime plugin/sema.lua")
require("sema").setup({
  -- unset: the plugin finds the server itself (PATH, then its private install)
  cmd = vim.env.SEMA_NVIM_CMD and vim.json.decode(vim.env.SEMA_NVIM_CMD) or nil,
  model = vim.env.SEMA_NVIM_MODEL,
  render_interval_ms = 20,
})

--- Wait until `pred()` is true (the event loop runs meanwhile), or fail.
function H.wait(what, pred, timeout_ms)
  if not vim.wait(timeout_ms or 20000, pred, 10) then
    error("timed out waiting for " .. what, 2)
  end
end

function H.chat()
  return require("sema").current()
end

function H.text()
  local chat = H.chat()
  return chat and chat:text() or ""
end

--- Wait until the chat buffer contains `needle` (plain text).
function H.wait_text(needle, timeout_ms)
  H.wait("the chat to show " .. vim.inspect(needle), function()
    return H.text():find(needle, 1, true) ~= nil
  end, timeout_ms)
end

function H.snapshot(name)
  H.result.snapshots[name] = H.text()
end

local events = {}
vim.api.nvim_create_autocmd("User", {
  pattern = { "SemaReady", "SemaPromptDone", "SemaHistoryShown" },
  callback = function(ev)
    events[#events + 1] = { name = ev.match, data = ev.data }
  end,
})

--- Wait for the `n`-th User event `name` (SemaReady, SemaPromptDone, SemaHistoryShown);
--- returns its data.
function H.wait_event(name, n)
  local found
  H.wait(name .. " #" .. (n or 1), function()
    local count = 0
    for _, e in ipairs(events) do
      if e.name == name then
        count = count + 1
        if count == (n or 1) then
          found = e.data
          return true
        end
      end
    end
    return false
  end)
  return found
end

--- Stand in for the user's picker: `decide(prompt, labels)` returns the label to pick,
--- nil to dismiss, or false to leave the picker open (a float nobody answers). Choices
--- arrive asynchronously, as with Telescope or fzf-lua.
function H.picker(decide)
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for _, item in ipairs(items) do
      labels[#labels + 1] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    table.insert(H.result.prompts, { prompt = opts.prompt, labels = labels, kind = opts.kind })
    local pick = decide(opts.prompt, labels)
    if pick == false then
      local buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(buf, 0, -1, true, labels)
      H.picker_win = vim.api.nvim_open_win(buf, true, {
        relative = "editor", row = 1, col = 1, width = 40, height = #labels, style = "minimal",
      })
      return
    end
    vim.schedule(function()
      for i, label in ipairs(labels) do
        if label == pick then
          return on_choice(items[i], i)
        end
      end
      on_choice(nil, nil)
    end)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(H.result.prompts, { prompt = opts.prompt, input = true })
    vim.schedule(function()
      on_confirm(H.input_answer)
    end)
  end
end

--- Type keys as a user would (`keys` in `:help key-notation`).
function H.type(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), "tx", false)
end

--- Type `text` (then Enter) into the chat's input window, as a user would.
function H.type_input(text)
  vim.api.nvim_set_current_win(H.chat().input_win)
  vim.cmd("stopinsert") -- a pending startinsert would eat the "A"
  H.type("A" .. text .. "<CR>")
end

--- Run the scenario, then write RESULT.json and stop the server. Errors are reported in
--- the result (with the chat's text at that moment) and as a non-zero exit.
function H.run(fn)
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    H.result.error = err
    pcall(H.snapshot, "at_error")
  end
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(H.result))
  f:close()
  local sema = require("sema")
  local client = sema._state.client
  sema.stop()
  if client then
    vim.wait(5000, function()
      return not client:is_running()
    end, 20)
  end
  if not ok then
    io.stderr:write(err .. "\n")
    os.exit(1)
  end
end

return H
