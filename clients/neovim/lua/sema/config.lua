--- Options of `require("sema").setup({...})` and their defaults (see `:help sema-config`).
local M = {}

---@class sema.Config
M.defaults = {
  -- The server command (a list), e.g. { "sema-rpc", "--log-level", "INFO" }. nil: `sema-rpc`
  -- on PATH, else the one `:Sema install` put under stdpath("data")/sema.
  cmd = nil,
  -- The Python `:Sema install` uses (>= 3.11); nil: python3, python3.X, python on PATH.
  python = nil,
  -- Extra environment for the server (merged over Neovim's own).
  env = {},
  -- `provider/model-id`, a profile name of $SEMA_ROOT/models.json, or nil for the
  -- server's default (the `main` profile, else the key that is set).
  model = nil,
  -- "Agent" or "Plan" for new sessions.
  mode = "Agent",
  -- "default" (ask before writes and commands), "acceptEdits" or "bypass".
  permission_mode = "default",
  -- Record sessions to this absolute folder (replayable with `sema-rpc replay`); nil: off.
  record_dir = nil,
  layout = {
    -- Where the chat opens: "right", "left", "below", "above" or "tab".
    position = "right",
    -- Width (right/left) or height (below/above) of the chat window.
    size = 80,
    -- Height of the input window under the chat.
    input_height = 3,
  },
  -- Streamed text is drawn in batches, at most once per this many milliseconds.
  render_interval_ms = 30,
  -- Show thinking (folded) in the chat.
  show_thinking = true,
  -- Reload open buffers of files the agent changed.
  reload_changed = true,
  -- Put the files a turn changed in the quickfix list when it ends.
  quickfix = true,
  -- Open completion when `@` or `/` is typed in the input (`<C-x><C-o>` works always).
  complete_on_trigger = true,
  keymaps = {
    interrupt = "<C-c>", -- chat and input: interrupt the running turn
    steer = "<C-s>", -- input: send into the running turn instead of queueing
    history_prev = "<Up>", -- input (insert mode): previous input
    history_next = "<Down>", -- input (insert mode): next input
    close = "q", -- chat (normal mode): close the chat windows
    focus_input = "i", -- chat (normal mode): go to the input
  },
}

---@type table
M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  local o = M.options
  if o.cmd ~= nil and (type(o.cmd) ~= "table" or #o.cmd == 0) then
    error("sema: `cmd` must be a non-empty list, e.g. { 'sema-rpc' }")
  end
  if o.mode ~= "Agent" and o.mode ~= "Plan" then
    error("sema: `mode` must be 'Agent' or 'Plan'")
  end
  if not vim.tbl_contains({ "default", "acceptEdits", "bypass" }, o.permission_mode) then
    error("sema: `permission_mode` must be 'default', 'acceptEdits' or 'bypass'")
  end
  return M.options
end

return M
