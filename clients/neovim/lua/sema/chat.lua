--- One chat: a session's transcript buffer, its input (a prompt buffer) and their windows.
---
--- Streamed deltas are queued and drawn by a timer, at most once per
--- `render_interval_ms`: a flush appends only the new text at the end of the buffer, so
--- its cost never depends on how long the answer or the conversation already is.
local config = require("sema.config")

local api = vim.api
local M = {}

local ns = api.nvim_create_namespace("sema.chat")
local THINKING_HEADER = "▸ Thinking"
local THINKING_PREFIX = "┊ "
local ICON = { running = "⋯", waiting = "?", done = "✓", failed = "✗", interrupted = "■" }

---@class sema.Chat
---@field session_id string
---@field working_dir string
---@field buf integer chat transcript
---@field input integer prompt buffer
---@field info table session:ready payload and later updates
local Chat = {}
Chat.__index = Chat
M.Chat = Chat

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

local function split_lines(text)
  return vim.split(text, "\n", { plain = true })
end

local function one_line(text, max)
  text = (text or ""):gsub("%s*\n%s*", " ")
  if max and #text > max then
    text = text:sub(1, max) .. "…"
  end
  return text
end

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

local function human_tokens(n)
  n = n or 0
  if n >= 1000 then
    return ("%.1fk"):format(n / 1000)
  end
  return tostring(n)
end

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

  self.input = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(self.input, "sema://input/" .. session_id)
  vim.bo[self.input].buftype = "prompt"
  vim.bo[self.input].filetype = "sema_input"
  vim.b[self.input].sema_session = session_id
  vim.fn.prompt_setprompt(self.input, "> ")
  vim.fn.prompt_setcallback(self.input, function(text)
    self:_on_submit(text, "followUp")
  end)
  vim.fn.prompt_setinterrupt(self.input, function()
    self.handlers.interrupt(self)
  end)
  local omni = "v:lua.require'sema.complete'.omnifunc"
  vim.bo[self.input].omnifunc = omni
  vim.bo[self.input].completefunc = omni
  -- narrow the menu as the user types, insert only on <C-y> (buffer-local since 0.11)
  pcall(api.nvim_set_option_value, "completeopt", "menuone,noinsert", { scope = "local", buf = self.input })
  self:_keymaps()
  return self
end

function Chat:_keymaps()
  local km = config.options.keymaps
  local function map(buf, modes, lhs, rhs, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set(modes, lhs, rhs, { buffer = buf, desc = desc, nowait = true })
    end
  end
  local interrupt = function()
    self.handlers.interrupt(self)
  end
  map(self.buf, "n", km.interrupt, interrupt, "Sema: interrupt the turn")
  map(self.input, "n", km.interrupt, interrupt, "Sema: interrupt the turn")
  map(self.buf, "n", km.close, function()
    self:close()
  end, "Sema: close the chat")
  map(self.buf, "n", km.focus_input, function()
    self:focus_input()
  end, "Sema: go to the input")
  map(self.input, "i", km.steer, function()
    self:_on_submit(self:_take_input(), "steer")
  end, "Sema: steer the running turn")
  map(self.input, "i", km.history_prev, function()
    self:_history(1)
  end, "Sema: previous input")
  map(self.input, "i", km.history_next, function()
    self:_history(-1)
  end, "Sema: next input")
  if config.options.complete_on_trigger then
    for _, trigger in ipairs({ "@", "/" }) do
      vim.keymap.set("i", trigger, function()
        if vim.fn.pumvisible() == 1 then
          return trigger
        end
        return trigger .. "<C-x><C-o>"
      end, { buffer = self.input, expr = true, desc = "Sema: complete " .. trigger })
    end
  end
end

-- ------------------------------------------------------------------- windows

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
    parts[#parts + 1] = human_tokens(usage.useTokens) .. "/" .. human_tokens(usage.maxTokens)
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
  local text = table.concat(parts, " · "):gsub("%%", "%%%%")
  api.nvim_set_option_value("winbar", "%#Title#Sema%* " .. text, { scope = "local", win = self.win })
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

--- Put `text` in the input line (a rewound or forked message, to edit and send again).
function Chat:set_input(text)
  local n = api.nvim_buf_line_count(self.input)
  local prompt = vim.fn.prompt_getprompt(self.input)
  local line = prompt .. text:gsub("\n", " ")
  api.nvim_buf_set_lines(self.input, n - 1, n, true, { line })
  if self.input_win and api.nvim_win_is_valid(self.input_win) then
    api.nvim_win_set_cursor(self.input_win, { n, #line })
  end
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

-- ------------------------------------------------------------------- tool lines

function Chat:_set_line(mark, text)
  local pos = api.nvim_buf_get_extmark_by_id(self.buf, ns, mark, {})
  local row = pos[1]
  if row and row < api.nvim_buf_line_count(self.buf) then
    -- replace the text, not the line, so the line's mark stays on it
    local old = api.nvim_buf_get_lines(self.buf, row, row + 1, true)[1]
    self:_modify(function()
      api.nvim_buf_set_text(self.buf, row, 0, row, #old, { text })
    end)
  end
end

function Chat:_tool_text(tool, status, detail)
  local text = tool.indent .. ICON[status] .. " " .. one_line(tool.title, 200)
  if detail and detail ~= "" then
    text = text .. " — " .. one_line(detail, 200)
  end
  return text
end

function Chat:tool_start(p)
  self:_header()
  local parent = p.agentId ~= "main" and self.tasks[p.agentId] or nil
  local tool = {
    name = p.toolName,
    title = p.title or p.toolName,
    input = p.input or {},
    indent = parent and (parent.indent .. "    ") or "  ",
    agent = p.agentId,
  }
  local line = self:_tool_text(tool, "running")
  local row
  if parent then
    -- under its Task, after the Task's last line
    self:flush()
    local pos = api.nvim_buf_get_extmark_by_id(self.buf, ns, parent.last_mark, {})
    row = pos[1] + 1
    self:_modify(function()
      api.nvim_buf_set_lines(self.buf, row, row, true, { line })
    end)
  else
    row = self:append({ line })
  end
  tool.mark = api.nvim_buf_set_extmark(self.buf, ns, row, 0, { right_gravity = false })
  if parent then
    parent.last_mark = tool.mark
  end
  self.tools[p.toolCallId] = tool
  if p.toolName == "Task" then
    self.tasks["task-" .. p.toolCallId] = { indent = tool.indent, last_mark = tool.mark, tool = tool }
  end
end

function Chat:tool_status(id, status, detail)
  local tool = self.tools[id]
  if tool and status == "failed" and tool.verdict then
    detail = tool.verdict -- the user's own answer says it better than the tool's error
  end
  if tool then
    self:_set_line(tool.mark, self:_tool_text(tool, status, detail))
  end
end

function Chat:tool_complete(p)
  self:tool_status(p.toolCallId, "done", p.summary)
  local tool = self.tools[p.toolCallId]
  if not tool then
    return
  end
  local path = tool.input.file_path
  if (p.toolName == "Write" or p.toolName == "Edit") and type(path) == "string" then
    self:_touched(path, p.summary ~= "" and p.summary or p.toolName)
  elseif p.toolName == "Bash" then
    self.ran_command = true
  end
end

function Chat:_touched(path, text)
  if not path:match("^/") then
    path = self.working_dir .. "/" .. path
  end
  path = vim.fs.normalize(path)
  if not self.touched[path] then
    self.touched_order[#self.touched_order + 1] = path
  end
  self.touched[path] = text
  if config.options.reload_changed then
    M.reload(path)
  end
end

--- Reload an open, unmodified buffer of `path` that the agent wrote (views are kept); a
--- modified one is left alone, with a warning.
function M.reload(path)
  local b = vim.fn.bufnr(path)
  if b <= 0 or not api.nvim_buf_is_loaded(b) then
    return
  end
  if vim.bo[b].modified then
    vim.notify("Sema changed " .. path .. ", which has unsaved changes here", vim.log.levels.WARN)
    return
  end
  local views = {}
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    views[w] = api.nvim_win_call(w, vim.fn.winsaveview)
  end
  api.nvim_buf_call(b, function()
    vim.cmd("silent! edit")
  end)
  for w, view in pairs(views) do
    api.nvim_win_call(w, function()
      vim.fn.winrestview(view)
    end)
  end
end

--- Reload the unmodified buffers whose file changed on disk (after a command ran).
function M.reload_changed()
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and not vim.bo[b].modified
      and api.nvim_buf_get_name(b) ~= "" then
      local autoread = vim.bo[b].autoread
      vim.bo[b].autoread = true
      pcall(vim.cmd.checktime, b)
      vim.bo[b].autoread = autoread
    end
  end
end

function Chat:task_end(p)
  local task = self.tasks[p.taskId]
  if task then
    local status = p.status == "completed" and "done" or (p.status == "interrupted" and "interrupted" or "failed")
    self:_set_line(task.tool.mark, self:_tool_text(task.tool, status, p.status ~= "completed" and p.content or nil))
  end
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
        human_tokens(p.tokenBefore),
        human_tokens(p.tokenCompact),
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

-- ------------------------------------------------------------------- input

function Chat:_take_input()
  local n = api.nvim_buf_line_count(self.input)
  local line = api.nvim_buf_get_lines(self.input, n - 1, n, true)[1] or ""
  local prompt = vim.fn.prompt_getprompt(self.input)
  api.nvim_buf_set_lines(self.input, n - 1, n, true, { prompt })
  vim.schedule(function()
    if api.nvim_get_current_buf() == self.input then
      vim.cmd("startinsert!")
    end
  end)
  return line:sub(#prompt + 1)
end

function Chat:_history(step)
  if #self.history == 0 then
    return
  end
  local pos = (self.history_pos or (#self.history + 1)) - step
  pos = math.max(1, math.min(#self.history + 1, pos))
  self.history_pos = pos
  self:set_input(self.history[pos] or "")
end

function Chat:_on_submit(text, delivery)
  -- the prompt buffer keeps old inputs above the new prompt line: drop them
  vim.schedule(function()
    if api.nvim_buf_is_valid(self.input) then
      local n = api.nvim_buf_line_count(self.input)
      if n > 1 then
        api.nvim_buf_set_lines(self.input, 0, n - 1, true, {})
      end
    end
  end)
  text = vim.trim(text or "")
  if text == "" then
    return
  end
  self.handlers.send(self, text, delivery)
end

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
  self.touched = {}
  self.touched_order = {}
  self.ran_command = false
  self.interrupted_shown = false
end

--- A turn ends (`state:update idle`): the quickfix list and reloads.
function Chat:on_turn_end()
  self.turn_open = false
  self:flush()
  if #self.touched_order > 0 then
    if config.options.quickfix then
      local items = {}
      for _, path in ipairs(self.touched_order) do
        items[#items + 1] = { filename = path, lnum = 1, text = self.touched[path] }
      end
      vim.fn.setqflist({}, " ", { title = "Sema: files changed by the turn", items = items })
    end
    self:append({
      "",
      ("Changed %d file%s%s"):format(
        #self.touched_order,
        #self.touched_order == 1 and "" or "s",
        config.options.quickfix and " (:copen)" or ""
      ),
    })
  end
  if self.ran_command and config.options.reload_changed then
    -- a command may have changed any file
    M.reload_changed()
  end
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
