--- One chat: a session's transcript buffer, its input (a prompt buffer) and their windows.
---
--- Streamed deltas are queued and drawn by a timer, at most once per
--- `render_interval_ms`: a flush appends only the new text at the end of the buffer, so
--- its cost never depends on how long the answer or the conversation already is.
---
--- This module keeps the transcript and the events that write it; `sema.Chat`'s other jobs
--- add their methods from beside it: the windows and winbar (window.lua), the input and
--- keymaps (input.lua), the tool lines (toollines.lua). The files a turn changed are
--- changes.lua's, the earlier conversation is drawn by history.lua.
local changes = require("sema.changes")
local config = require("sema.config")
local text_mod = require("sema.text")

local api = vim.api
local M = {}

local ns = api.nvim_create_namespace("sema.chat")
local THINKING_HEADER = "▸ Thinking"
local THINKING_PREFIX = "┊ "

---@class sema.Chat
---@field session_id string
---@field working_dir string
---@field buf integer chat transcript
---@field input integer prompt buffer
---@field info table session:ready payload and later updates
local Chat = {}
Chat.__index = Chat
M.Chat = Chat
for _, part in ipairs({ "sema.window", "sema.input", "sema.toollines" }) do
  for name, method in pairs(require(part).methods) do
    Chat[name] = method
  end
end

--- Fold thinking blocks: the header opens a fold, its `┊ ` lines are inside it.
function M.foldexpr()
  local line = vim.fn.getline(vim.v.lnum)
  if line:sub(1, #THINKING_HEADER) == THINKING_HEADER then
    return ">1"
  elseif line:sub(1, #THINKING_PREFIX) == THINKING_PREFIX then
    return "1"
  end
  return "0"
end

local split_lines = text_mod.split_lines
local one_line = text_mod.one_line

---@param session_id string
---@param working_dir string
---@param handlers {send: fun(chat: sema.Chat, text: string, delivery: string), interrupt: fun(chat: sema.Chat)}
---@return sema.Chat
function M.new(session_id, working_dir, handlers)
  local self = setmetatable({
    session_id = session_id,
    working_dir = working_dir,
    handlers = handlers,
    info = { mode = config.options.mode, permissionMode = config.options.permission_mode },
    state = "idle",
    inflight = 0,
    queued = {},
    pending = {},
    block = nil,
    need_header = false,
    streamed = false,
    tools = {},
    tasks = {},
    touched = {},
    touched_order = {},
    ran_command = false,
    interrupted_shown = false,
    history = {},
    history_pos = nil,
    todos = {},
    prompts = {}, -- the user's prompts with their server ids: {id, text}, oldest first
    turn_diffs = {}, -- `turn:diff` payloads, oldest first
  }, Chat)

  self.buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(self.buf, "sema://chat/" .. session_id)
  vim.bo[self.buf].filetype = "sema"
  vim.bo[self.buf].syntax = "markdown"
  vim.bo[self.buf].modifiable = false
  vim.b[self.buf].sema_session = session_id

  require("sema.input").create(self)
  return self
end

-- ------------------------------------------------------------------- writing

function Chat:_modify(fn)
  vim.bo[self.buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[self.buf].modifiable = false
  if not ok then
    error(err)
  end
end

local function last_line(buf)
  local n = api.nvim_buf_line_count(buf)
  return n, api.nvim_buf_get_lines(buf, n - 1, n, true)[1]
end

--- Append whole lines after the stream (an empty last line is reused). Returns the row
--- (0-based) of the first appended line.
function Chat:append(lines)
  self:flush()
  self.block = nil
  local row
  self:_modify(function()
    local n, last = last_line(self.buf)
    if last == "" then
      row = n - 1
      api.nvim_buf_set_lines(self.buf, n - 1, n, true, lines)
    else
      row = n
      api.nvim_buf_set_lines(self.buf, n, n, true, lines)
    end
  end)
  self:_scroll_to_end(false)
  return row
end

--- Thinking of a past message, folded as a streamed one is.
function Chat:append_thinking(text)
  local out = { THINKING_HEADER }
  for _, line in ipairs(split_lines(text)) do
    out[#out + 1] = THINKING_PREFIX .. line
  end
  out[#out + 1] = ""
  self:append(out)
end

--- Empty the transcript (a rewind shows the conversation again from the server).
function Chat:clear(title)
  self:flush()
  self.block, self.need_header, self.streamed = nil, false, false
  self.tools, self.tasks, self.prompts = {}, {}, {}
  api.nvim_buf_clear_namespace(self.buf, ns, 0, -1)
  self:_modify(function()
    api.nvim_buf_set_lines(self.buf, 0, -1, true, { title })
  end)
end

--- A user prompt with its server id (from `session/prompt`'s result or `session/messages`).
function Chat:remember_prompt(id, text)
  if id then
    self.prompts[#self.prompts + 1] = { id = id, text = text }
  end
end

function Chat:_header()
  if self.need_header then
    self.need_header = false
    self:append({ "", "## Sema", "" })
  end
end

--- Queue a delta of `kind` ("text" or "thinking"); the render timer draws it.
function Chat:stream(kind, delta)
  if delta == "" then
    return
  end
  local pending = self.pending
  local last = pending[#pending]
  if last and last.kind == kind then
    last.n = last.n + 1
    last.parts[last.n] = delta
  else
    pending[#pending + 1] = { kind = kind, parts = { delta }, n = 1 }
  end
  if not self.timer then
    self.timer = assert(vim.uv.new_timer())
    self.timer:start(config.options.render_interval_ms, 0, function()
      vim.schedule(function()
        self:flush()
      end)
    end)
  end
end

--- Draw what the stream queued. The cost is that of the new text only.
function Chat:flush()
  if self.timer then
    self.timer:stop()
    self.timer:close()
    self.timer = nil
  end
  if #self.pending == 0 then
    return
  end
  local pending = self.pending
  self.pending = {}
  if self.need_header then
    self:_header()
  end
  self:_modify(function()
    for _, seg in ipairs(pending) do
      local text = table.concat(seg.parts, "", 1, seg.n)
      if seg.kind ~= self.block then
        -- a new block starts on its own line(s)
        local n, last = last_line(self.buf)
        local open = {}
        if last ~= "" then
          open[#open + 1] = ""
          if self.block == nil and seg.kind == "text" then
            open[#open + 1] = "" -- a blank line between tool lines and the text after them
          end
        end
        if seg.kind == "thinking" then
          open[#open + 1] = THINKING_HEADER
          open[#open + 1] = THINKING_PREFIX
        end
        if #open > 0 then
          if last == "" then
            api.nvim_buf_set_lines(self.buf, n - 1, n, true, open)
          else
            api.nvim_buf_set_lines(self.buf, n, n, true, open)
          end
        end
        if seg.kind == "text" and self.block == "thinking" then
          -- leave the fold: an empty separator line, then the answer
          local m = api.nvim_buf_line_count(self.buf)
          api.nvim_buf_set_lines(self.buf, m, m, true, { "" })
        end
        self.block = seg.kind
      end
      if seg.kind == "thinking" then
        text = text:gsub("\n", "\n" .. THINKING_PREFIX)
      end
      local n, last = last_line(self.buf)
      api.nvim_buf_set_text(self.buf, n - 1, #last, n - 1, #last, split_lines(text))
    end
  end)
  self:_scroll_to_end(false)
end

-- ------------------------------------------------------------------- events

function Chat:on_event(method, p)
  local main = (p.agentId or "main") == "main"
  if method == "message:text:chunk" then
    if main then
      self.streamed = true
      self:stream("text", p.delta or "")
    end
  elseif method == "message:thinking:chunk" then
    if main and config.options.show_thinking then
      self:stream("thinking", p.delta or "")
    end
  elseif method == "message:complete" then
    if main then
      if not self.streamed and (p.content or "") ~= "" then
        self:stream("text", p.content)
      end
      self.streamed = false
      self:flush()
    end
  elseif method == "tool:execution:start" then
    self:tool_start(p)
  elseif method == "tool:execution:complete" then
    self:tool_complete(p)
  elseif method == "tool:execution:error" then
    self:tool_status(p.toolCallId, "failed", p.content)
  elseif method == "task:agent:end" then
    self:task_end(p)
  elseif method == "file:reference" then
    local lines = {}
    for _, ref in ipairs(p.references or {}) do
      lines[#lines + 1] = "  @ " .. ref.name .. (ref.error and (" — " .. one_line(ref.error, 120)) or "")
    end
    if #lines > 0 then
      self:append(lines)
    end
  elseif method == "state:update" then
    self.state = p.state
    if main and p.state == "processing" then
      self:on_turn_start()
    elseif main and p.state == "idle" then
      self:on_turn_end()
    end
    self:_winbar()
  elseif method == "conversation:usage" then
    self.info.usage = p.usage
    self.totals = p.session or self.totals
    self:_winbar()
  elseif method == "model:update" then
    self.info.model = p.model
    self:_winbar()
  elseif method == "turn:diff" then
    if main and #(p.files or {}) > 0 then
      self.turn_diffs[#self.turn_diffs + 1] = p
      local adds, dels = 0, 0
      for _, f in ipairs(p.files) do
        adds, dels = adds + (f.additions or 0), dels + (f.deletions or 0)
      end
      self:append({
        ("  Δ %d file%s changed (+%d −%d) — :Sema diff"):format(#p.files, #p.files == 1 and "" or "s", adds, dels),
      })
    end
  elseif method == "mode:update" then
    self.info.mode = p.mode
    self:_winbar()
  elseif method == "sandbox:update" then
    self.info.sandbox = { mode = p.mode, network = p.network, available = p.available, reason = p.reason }
    self:_winbar()
  elseif method == "todos:update" then
    self.todos = p.todos or {}
    local lines = { "  Todos:" }
    for _, t in ipairs(self.todos) do
      local box = t.status == "completed" and "[x]" or (t.status == "in_progress" and "[~]" or "[ ]")
      lines[#lines + 1] = "    " .. box .. " " .. one_line(t.content, 200)
    end
    if #self.todos > 0 then
      self:append(lines)
    end
    self:_winbar()
  elseif method == "session:interrupted" then
    if main then
      self.interrupted_shown = true
      self:append({ "", "[interrupted]" })
    end
  elseif method == "session:error" then
    local err = p.error or {}
    local who = main and "" or "  "
    self:append({ who .. "Error (" .. (p.type or "error") .. "): " .. one_line(err.message, 500) })
  elseif method == "config:no_models" then
    self:append({ "No model configured: " .. one_line(p.message), one_line(p.suggestion) })
  elseif method == "session:cleared" then
    self:append({ "", "— context cleared —" })
  elseif method == "compact:exec" then
    self:append({
      ("— compacted (%s, %s): %s → %s tokens%s —"):format(
        p.trigger or "auto",
        p.strategy or "?",
        text_mod.human_tokens(p.tokenBefore),
        text_mod.human_tokens(p.tokenCompact),
        p.errMsg and (", " .. p.errMsg) or ""
      ),
    })
  end
end

--- session:ready (also again after a resume).
function Chat:ready(info)
  for k, v in pairs(info) do
    self.info[k] = v
  end
  local hist = info.projectInputHistory or {}
  self.history = {}
  for i = #hist, 1, -1 do
    self.history[#self.history + 1] = hist[i]
  end
  self:_winbar()
end

-- ------------------------------------------------------------------- turns

--- Show the user's input in the transcript (called when it starts a turn or joins one).
function Chat:show_input(text, note)
  local lines = { "", "## You" .. (note and (" (" .. note .. ")") or ""), "" }
  vim.list_extend(lines, split_lines(text))
  if self.history[#self.history] ~= text then
    self.history[#self.history + 1] = text
  end
  self.history_pos = nil
  self:append(lines)
  self.need_header = true
end

--- A turn starts (`state:update processing`): a queued follow-up shows its input now.
function Chat:on_turn_start()
  if not self.turn_open then
    local text = table.remove(self.queued, 1)
    if text then
      self:show_input(text)
    end
  end
  self.turn_open = true
  changes.turn_start(self)
  self.interrupted_shown = false
end

--- A turn ends (`state:update idle`): the quickfix list and reloads.
function Chat:on_turn_end()
  self.turn_open = false
  self:flush()
  changes.turn_end(self)
  self:_winbar()
end

--- A `session/prompt` answered (its turn ended, or it failed before one started).
function Chat:prompt_answered(err, result, text)
  self.inflight = self.inflight - 1
  self:flush()
  if err then
    self:append({ "Error: " .. one_line(err.message, 500) })
  elseif result then
    local reason = result.stopReason
    if reason == "interrupted" and not self.interrupted_shown then
      self.interrupted_shown = true
      self:append({ "", "[interrupted]" })
    elseif reason == "max_turns" then
      self:append({ "", "[stopped: the turn reached its limit of model calls]" })
    end
    if result.usage then
      self.info.usage = result.usage
    end
    if result.session then
      self.totals = result.session
    end
    self:remember_prompt(result.messageId, text)
  end
  self:_winbar()
  api.nvim_exec_autocmds("User", {
    pattern = "SemaPromptDone",
    data = { sessionId = self.session_id, stopReason = result and result.stopReason, error = err },
  })
end

--- The buffer's text (for tests, scripts and `:w`-ing a transcript).
function Chat:text()
  self:flush()
  return table.concat(api.nvim_buf_get_lines(self.buf, 0, -1, true), "\n")
end

return M
