--- The chat's windows (methods of `sema.Chat`): the transcript above its input, their
--- layout (`config.layout`), the winbar that says what the session is doing, and follow
--- mode (the view stays at the end while the cursor is on the last line).
local config = require("sema.config")
local text = require("sema.text")

local api = vim.api
local M = {}
local Chat = {}
M.methods = Chat

--- A short word for the session's OS sandbox (`session:ready.sandbox`, `sandbox:update`):
--- `sandbox:workspace`, `sandbox:read-only`, `sandbox:off`, `no sandbox`; nil when the
--- server says nothing about one.
function M.sandbox_label(sandbox)
  if type(sandbox) ~= "table" then
    return nil
  end
  if sandbox.available == false then
    return "no sandbox"
  end
  local word = sandbox.mode == "workspace-write" and "workspace" or sandbox.mode or "?"
  return "sandbox:" .. word .. (sandbox.network and "+net" or "")
end

function Chat:is_visible()
  return self.win ~= nil and api.nvim_win_is_valid(self.win)
end

--- Show this chat in `other`'s windows (when another chat is visible), so switching chats
--- never stacks more splits.
function Chat:take_windows(other)
  if other and other ~= self and other:is_visible() and other.input_win
    and api.nvim_win_is_valid(other.input_win) then
    self.win, self.input_win = other.win, other.input_win
    other.win, other.input_win = nil, nil
    api.nvim_win_set_buf(self.win, self.buf)
    api.nvim_win_set_buf(self.input_win, self.input)
    self:_winbar()
    self:_scroll_to_end(true)
    return true
  end
  return false
end

--- Show the chat and its input (creating the windows if needed) and focus the input.
---@param replace sema.Chat? a visible chat whose windows this one takes over
function Chat:show(replace)
  if not self:is_visible() and not self:take_windows(replace) then
    local layout = config.options.layout
    local pos = layout.position
    local split = ({
      tab = "tabnew",
      left = ("topleft %dvsplit"):format(layout.size),
      below = ("botright %dsplit"):format(layout.size),
      above = ("topleft %dsplit"):format(layout.size),
    })[pos] or ("botright %dvsplit"):format(layout.size)
    if not pcall(vim.cmd, split) then
      vim.cmd("tabnew") -- no room for a split (E36)
    end
    self.win = api.nvim_get_current_win()
    api.nvim_win_set_buf(self.win, self.buf)
    local function wo(win, name, value)
      api.nvim_set_option_value(name, value, { scope = "local", win = win })
    end
    wo(self.win, "wrap", true)
    wo(self.win, "linebreak", true)
    wo(self.win, "number", false)
    wo(self.win, "relativenumber", false)
    wo(self.win, "signcolumn", "no")
    wo(self.win, "foldmethod", "expr")
    wo(self.win, "foldexpr", "v:lua.require'sema.chat'.foldexpr()")
    wo(self.win, "foldlevel", 0)
    wo(self.win, "winfixwidth", pos == "left" or pos == "right")
    vim.cmd(("belowright %dsplit"):format(layout.input_height))
    self.input_win = api.nvim_get_current_win()
    api.nvim_win_set_buf(self.input_win, self.input)
    wo(self.input_win, "winfixheight", true)
    wo(self.input_win, "number", false)
    wo(self.input_win, "relativenumber", false)
    wo(self.input_win, "signcolumn", "no")
    self:_winbar()
    self:_scroll_to_end(true)
  end
  self:focus_input()
end

function Chat:focus_input()
  if self.input_win and api.nvim_win_is_valid(self.input_win) then
    api.nvim_set_current_win(self.input_win)
    vim.cmd("startinsert!")
  end
end

function Chat:close()
  for _, w in ipairs({ self.input_win, self.win }) do
    if w and api.nvim_win_is_valid(w) and #api.nvim_list_wins() > 1 then
      api.nvim_win_close(w, true)
    end
  end
  self.win, self.input_win = nil, nil
end

function Chat:_winbar()
  if not self:is_visible() then
    return
  end
  local info = self.info
  local parts = {
    info.mode or "Agent",
    info.permissionMode or "default",
    info.model or "no model",
    self.state == "processing" and "working…" or "idle",
  }
  local sandbox = M.sandbox_label(info.sandbox)
  if sandbox then
    table.insert(parts, 3, sandbox)
  end
  if #self.queued > 0 then
    parts[#parts + 1] = #self.queued .. " queued"
  end
  local usage = info.usage
  if usage and (usage.maxTokens or 0) > 0 then
    parts[#parts + 1] = text.human_tokens(usage.useTokens) .. "/" .. text.human_tokens(usage.maxTokens)
  end
  -- the session's cost, when the model's price is known
  local cost = self.totals and self.totals.costUsd
  if cost then
    parts[#parts + 1] = ("$%.4f"):format(cost)
  end
  local done, total = 0, #self.todos
  for _, t in ipairs(self.todos) do
    if t.status == "completed" then
      done = done + 1
    end
  end
  if total > 0 then
    parts[#parts + 1] = ("todos %d/%d"):format(done, total)
  end
  local bar = table.concat(parts, " · "):gsub("%%", "%%%%")
  api.nvim_set_option_value("winbar", "%#Title#Sema%* " .. bar, { scope = "local", win = self.win })
end

--- Keep the view at the end while the cursor is on the last line (follow mode).
function Chat:_scroll_to_end(force)
  if not self:is_visible() then
    return
  end
  local last = api.nvim_buf_line_count(self.buf)
  local cursor = api.nvim_win_get_cursor(self.win)
  if force or api.nvim_get_current_win() ~= self.win or cursor[1] >= (self.last_seen or 1) then
    api.nvim_win_set_cursor(self.win, { last, 0 })
  end
  self.last_seen = last
end

return M
