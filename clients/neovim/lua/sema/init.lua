--- sema.nvim: the sema-rpc coding agent in Neovim buffers. See `:help sema`.
local config = require("sema.config")
local rpc = require("sema.rpc")
local chat_mod = require("sema.chat")
local pick = require("sema.pick")

local api = vim.api
local M = {}

M.version = "0.1.0"

local state = {
  ---@type sema.RpcClient?
  client = nil,
  init = nil, -- the initialize result
  waiting = {}, -- callbacks waiting for the server to be initialized
  ---@type table<string, sema.Chat>
  chats = {},
  ---@type sema.Chat?
  current = nil,
}
M._state = state

local function notify(msg, level)
  vim.notify("Sema: " .. msg, level or vim.log.levels.INFO)
end

--- Configure the plugin (optional: the defaults work with `sema-rpc` on $PATH).
---@param opts table?
function M.setup(opts)
  config.set(opts)
end

local function new_session_id()
  local bytes = vim.uv.random(8)
  local hex = bytes and bytes:gsub(".", function(c)
    return ("%02x"):format(c:byte())
  end) or tostring(vim.uv.hrtime())
  return "nvim-" .. hex
end

local function has_method(name)
  local caps = state.init and state.init.capabilities
  return caps ~= nil and vim.tbl_contains(caps.methods or {}, name)
end
M.has_method = has_method

-- ------------------------------------------------------------------- the server

local handlers = {
  on_notification = function(method, params)
    local chat = state.chats[params.sessionId or ""]
    if not chat or chat.remote then
      return
    end
    if method == "session:ready" then
      chat:ready(params)
      api.nvim_exec_autocmds("User", { pattern = "SemaReady", data = params })
    else
      chat:on_event(method, params)
    end
  end,
  on_request = function(method, params, id)
    require("sema.consent").handle(state.client, state.chats[params.sessionId or ""], method, params, id)
  end,
  on_cancel = function(id, params, client)
    require("sema.consent").cancelled(id, client, params.sessionId)
  end,
}

--- The exit of `client`: its chats detach (the next prompt restarts the server and resumes
--- each session from its history); their in-flight prompts were answered with an error.
local function on_exit(client, code, signal, stderr, stopping)
  if state.client ~= client then
    return
  end
  state.client, state.init = nil, nil
  for _, chat in pairs(state.chats) do
    if not chat.remote then -- a chat on another server's session lives on without this one
      chat.attached = false
      chat.attaching = false
      chat.turn_open = false
      chat.state = "idle"
      chat.queued = {}
    end
  end
  if not stopping and (code ~= 0 or signal ~= 0) then
    local tail = vim.trim(stderr or ""):sub(-600)
    notify(
      ("sema-rpc exited (code %d, signal %d)%s"):format(code, signal, tail ~= "" and (":\n" .. tail) or ""),
      vim.log.levels.ERROR
    )
  end
end

local function fail_waiting(msg)
  state.waiting = {}
  for _, chat in pairs(state.chats) do
    chat.attaching = false
  end
  notify(msg, vim.log.levels.ERROR)
end

--- Run `cb(client, init)` once the server is running and initialized (started on demand).
function M.with_server(cb)
  if state.client and state.client:is_running() and state.init then
    return cb(state.client, state.init)
  end
  table.insert(state.waiting, cb)
  if state.client and state.client:is_running() then
    return
  end
  local cmd, source = require("sema.install").resolve()
  if not cmd then
    return fail_waiting(source)
  end
  local env = next(config.options.env) and config.options.env or nil
  local client
  client = rpc.start(cmd, { env = env }, {
    on_notification = handlers.on_notification,
    on_request = handlers.on_request,
    on_cancel = handlers.on_cancel,
    on_exit = function(...)
      on_exit(client, ...)
    end,
  })
  state.client = client
  client:request("initialize", {
    protocolVersion = 1,
    clientInfo = { name = "sema.nvim", version = M.version },
    capabilities = { permissions = true, askQuestion = true, planExit = true },
  }, function(err, result)
    if err then
      return fail_waiting("initialize failed: " .. (err.message or "?"))
    end
    local waiting = state.waiting
    state.waiting = {}
    state.init = result
    for _, f in ipairs(waiting) do
      f(client, result)
    end
  end)
end

--- Stop the server (an orderly shutdown; history is already on disk).
function M.stop()
  if state.client then
    state.client:stop()
  end
end

-- ------------------------------------------------------------------- sessions

local function attach(chat, opts, cb)
  if chat.remote then
    -- a session another process hosts: its connection is the only way to it
    if chat.remote:is_running() and chat.attached then
      return cb and cb(chat.remote, chat.info)
    end
    return notify("the server of this session is gone (:Sema attach lists the live ones)", vim.log.levels.WARN)
  end
  if chat.attaching then
    -- one session/create at a time: later callers wait for it
    if cb then
      table.insert(chat.attach_waiters, cb)
    end
    return
  end
  chat.attaching = true
  chat.attach_waiters = cb and { cb } or {}
  M.with_server(function(client)
    local params = {
      sessionId = chat.session_id,
      workingDir = chat.working_dir,
      model = opts.model or chat.model_override or config.options.model,
      permissionMode = chat.info.permissionMode or config.options.permission_mode,
      recordDir = config.options.record_dir,
    }
    if not opts.resume then
      params.mode = chat.info.mode or config.options.mode
    end
    client:request("session/create", params, function(err, result)
      local waiters = chat.attach_waiters
      chat.attaching, chat.attach_waiters = false, {}
      if err then
        chat:append({ "Could not start the session: " .. (err.message or "?") })
        return
      end
      chat.attached = true
      chat:ready(result)
      for _, f in ipairs(waiters) do
        f(client, result)
      end
    end)
  end)
end

local function register(session_id, working_dir)
  local chat
  chat = chat_mod.new(session_id, working_dir, {
    send = function(c, text, delivery)
      M.send(text, { delivery = delivery, chat = c })
    end,
    interrupt = function(c)
      M.interrupt(c)
    end,
  })
  state.chats[session_id] = chat
  return chat
end
M._register = register

--- Open a new chat (a new session) in the current working directory.
---@param opts {model: string?, show: boolean?}?
---@return sema.Chat
function M.new_chat(opts)
  opts = opts or {}
  local cwd = vim.fn.getcwd()
  local chat = register(new_session_id(), cwd)
  if opts.model then
    chat.info.model = opts.model
    chat.model_override = opts.model -- kept when the session is resumed after a restart
  end
  local previous = state.current
  state.current = chat
  if opts.show ~= false then
    chat:show(previous)
  end
  chat:append({ "# Sema — " .. vim.fn.fnamemodify(cwd, ":~") })
  attach(chat, { model = opts.model })
  return chat
end

--- Show the current chat (creating one if there is none) and focus its input.
---@return sema.Chat
function M.open()
  if state.current then
    state.current:show()
    if not state.current.attached then
      attach(state.current, { resume = true })
    end
    return state.current
  end
  return M.new_chat()
end

--- The chat the commands act on: the one of the current buffer, else the last opened.
---@return sema.Chat?
function M.current()
  local sid = vim.b.sema_session
  return (sid and state.chats[sid]) or state.current
end

--- Send `text` to the chat (opening one if needed). While a turn runs, `delivery`
--- "followUp" (default) queues it as the next turn; "steer" adds it to the running turn.
---@param text string
---@param opts {delivery: string?, chat: sema.Chat?}?
function M.send(text, opts)
  opts = opts or {}
  local chat = opts.chat or M.current() or M.open()
  local delivery = opts.delivery or "followUp"
  local function go(client)
    -- an attached chat may find a turn running that another client started
    if chat.inflight > 0 or (chat.remote and chat.state == "processing") then
      if delivery == "steer" then
        chat:show_input(text, "steer")
      else
        table.insert(chat.queued, text)
        notify("queued after the current turn")
      end
    else
      chat.turn_open = true
      chat:show_input(text)
    end
    chat.inflight = chat.inflight + 1
    chat:_winbar()
    client:request(
      "session/prompt",
      { sessionId = chat.session_id, input = text, delivery = delivery },
      function(err, result)
        chat:prompt_answered(err, result, text)
      end
    )
  end
  if chat.remote then
    attach(chat, {}, go)
  elseif chat.attached and state.client and state.client:is_running() then
    go(state.client)
  else
    attach(chat, { resume = true }, go)
  end
end

--- Interrupt the running turn of the chat (`<C-c>` in the chat or its input).
function M.interrupt(chat)
  chat = chat or M.current()
  local client = chat and (chat.remote or state.client)
  if not chat or not client then
    return
  end
  client:request("session/interrupt", { sessionId = chat.session_id }, function(err, result)
    if err then
      notify("interrupt failed: " .. (err.message or "?"), vim.log.levels.WARN)
    elseif result and not result.interrupted then
      notify("nothing to interrupt")
    end
  end)
end

--- Pick a session of this project (newest first) and resume it in a chat.
function M.resume()
  local cwd = vim.fn.getcwd()
  M.with_server(function(client)
    client:request("session/list", { workingDir = cwd }, function(err, result)
      if err then
        return notify("session/list failed: " .. (err.message or "?"), vim.log.levels.ERROR)
      end
      local sessions = result.sessions or {}
      if #sessions == 0 then
        return notify("no saved sessions for " .. cwd)
      end
      pick.select(sessions, {
        prompt = "Resume a Sema session",
        kind = "sema.session",
        format = function(s)
          return ("%s  (%s, %d messages)"):format(
            s.title or s.sessionId,
            (s.updatedAt or ""):gsub("T", " "):sub(1, 16),
            s.messageCount or 0
          )
        end,
      }, function(item)
        M.resume_session(item.sessionId, item)
      end)
    end)
  end)
end

local redraw -- defined with rewind and fork below

--- Resume the session `session_id` (from `session/list`) in a chat and show it.
function M.resume_session(session_id, item)
  local chat = state.chats[session_id]
  local previous = state.current
  local title = "# Sema — resumed: " .. ((item and item.title) or session_id)
  if chat then
    state.current = chat
    chat:show(previous)
    -- Drawn again from the server, as a fresh Neovim draws it (the marker, then
    -- SemaHistoryShown); a turn still streaming into the buffer is left as it is.
    if chat.inflight == 0 and has_method("session/messages") then
      local function draw(client)
        redraw(client, chat, title)
      end
      if chat.attached and state.client and state.client:is_running() then
        M.with_server(draw)
      else
        attach(chat, { resume = true }, draw)
      end
    end
    return chat
  end
  chat = register(session_id, (item and item.workingDir) or vim.fn.getcwd())
  state.current = chat
  chat:show(previous)
  chat:append({ title })
  attach(chat, { resume = true }, function(client, ready)
    if not ready.historyLoaded then
      chat:append({ "(no saved history for this session: it starts empty)" })
    elseif has_method("session/messages") then
      require("sema.history").show(client, chat, function()
        api.nvim_exec_autocmds("User", { pattern = "SemaHistoryShown", data = { sessionId = chat.session_id } })
      end)
    else
      chat:append({
        ("(%d earlier messages are in the session's history; the conversation goes on from there)"):format(
          (item and item.messageCount) or 0
        ),
      })
    end
  end)
  return chat
end

-- ------------------------------------------------------------------- modes and model

local function with_chat(fn)
  local chat = M.current()
  if not chat then
    return notify("no chat: open one with :Sema", vim.log.levels.WARN)
  end
  if not chat.attached or chat.remote then
    return attach(chat, { resume = true }, function(client)
      fn(chat, client)
    end)
  end
  M.with_server(function(client)
    fn(chat, client)
  end)
end

--- Set the mode ("Agent" or "Plan"); without an argument, toggle it.
function M.set_mode(mode)
  with_chat(function(chat, client)
    mode = mode or (chat.info.mode == "Plan" and "Agent" or "Plan")
    client:request("mode/update", { sessionId = chat.session_id, mode = mode }, function(err, result)
      if err then
        return notify("mode/update failed: " .. (err.message or "?"), vim.log.levels.ERROR)
      end
      chat.info.mode = result.mode
      chat:_winbar()
      notify("mode: " .. result.mode)
    end)
  end)
end

local PERMISSION_MODES = {
  { mode = "default", text = "default — ask before writes and commands" },
  { mode = "acceptEdits", text = "acceptEdits — writes inside the project run; commands ask" },
  { mode = "bypass", text = "bypass — nothing inside the project asks" },
}

--- Set the permission mode; without an argument, pick one.
function M.set_permission_mode(mode)
  with_chat(function(chat, client)
    local function apply(m)
      client:request(
        "permissionMode/update",
        { sessionId = chat.session_id, permissionMode = m },
        function(err, result)
          if err then
            return notify("permissionMode/update failed: " .. (err.message or "?"), vim.log.levels.ERROR)
          end
          chat.info.permissionMode = result.permissionMode
          chat:_winbar()
          notify("permission mode: " .. result.permissionMode)
        end
      )
    end
    pick.mode(mode, PERMISSION_MODES, {
      prompt = "Sema permission mode (now " .. (chat.info.permissionMode or "default") .. ")",
      kind = "sema.permission_mode",
    }, apply)
  end)
end

local SANDBOX_MODES = {
  { mode = "workspace-write", text = "workspace-write — commands write only in the project (not .git/), no network" },
  { mode = "read-only", text = "read-only — commands cannot write (but a temp dir) or connect" },
  { mode = "off", text = "off — commands run unconfined" },
}

--- Set the OS sandbox of the current chat's commands; without an argument, pick one.
function M.set_sandbox(mode)
  with_chat(function(chat, client)
    if not has_method("session/setSandbox") then
      return notify("this sema-rpc has no sandbox (no session/setSandbox)", vim.log.levels.WARN)
    end
    local function apply(m)
      client:request("session/setSandbox", { sessionId = chat.session_id, mode = m }, function(err, result)
        if err then
          return notify("session/setSandbox failed: " .. (err.message or "?"), vim.log.levels.ERROR)
        end
        chat.info.sandbox = result
        chat:_winbar()
        notify("sandbox: " .. result.mode)
      end)
    end
    local now = chat.info.sandbox and chat.info.sandbox.mode or "?"
    pick.mode(mode, SANDBOX_MODES, { prompt = "Sema sandbox (now " .. now .. ")", kind = "sema.sandbox" }, apply)
  end)
end

--- For a statusline: the current chat's sandbox (`sandbox:workspace`, `sandbox:read-only`,
--- `sandbox:off`, `no sandbox`), or "" without a chat or a server that reports one.
--- `set statusline+=%{v:lua.require'sema'.statusline()}`
function M.statusline()
  local chat = M.current()
  return chat and require("sema.window").sandbox_label(chat.info.sandbox) or ""
end

--- Pick the session's model (needs a server that offers `model/list` and `session/setModel`).
function M.pick_model()
  with_chat(function(chat, client)
    if not (has_method("model/list") and has_method("session/setModel")) then
      local version = state.init and state.init.serverInfo and state.init.serverInfo.version or "?"
      return notify(
        ("this sema-rpc (%s) cannot list or switch models (it has no model/list). "
          .. "Start a session on another model with :Sema new {model}, or set `model` in setup()."):format(version),
        vim.log.levels.WARN
      )
    end
    client:request("model/list", { sessionId = chat.session_id }, function(err, result)
      if err then
        return notify("model/list failed: " .. (err.message or "?"), vim.log.levels.ERROR)
      end
      local current = result.current or chat.info.model
      pick.select(result.models or {}, {
        prompt = "Sema model (now " .. (current or "?") .. ")",
        kind = "sema.model",
        format = function(m)
          local extra = { m.provider .. "/" .. m.model }
          if m.contextLength then
            extra[#extra + 1] = ("%dk context"):format(math.floor(m.contextLength / 1000))
          end
          if m.thinking then
            extra[#extra + 1] = "thinking"
          end
          if m.images then
            extra[#extra + 1] = "images"
          end
          return (m.name == current and "* " or "  ") .. m.name .. "  (" .. table.concat(extra, ", ") .. ")"
        end,
      }, function(m)
        client:request("session/setModel", { sessionId = chat.session_id, model = m.name }, function(e, r)
          if e then
            return notify("session/setModel failed: " .. (e.message or "?"), vim.log.levels.ERROR)
          end
          chat.info.model = r.model
          chat:_winbar()
          notify("model: " .. r.model .. " (from the next model call)")
        end)
      end)
    end)
  end)
end

-- ------------------------------------------------------------------- rewind, fork, diff

--- Pick one of the chat's prompts (newest first), then call `cb(prompt)`.
local function pick_prompt(chat, what, cb)
  if #chat.prompts == 0 then
    return notify("no message of yours to " .. what .. " from in this chat yet", vim.log.levels.WARN)
  end
  local items = {}
  for i = #chat.prompts, 1, -1 do
    items[#items + 1] = chat.prompts[i]
  end
  pick.select(items, {
    prompt = "Sema: " .. what .. " to before which message?",
    kind = "sema.message",
    format = function(p)
      return (p.text:gsub("%s+", " "):sub(1, 80))
    end,
  }, cb)
end

--- Show the chat's conversation again from the server (after a rewind, a fork, or a resume
--- of a chat already open) and put `input` in the input line.
redraw = function(client, chat, title, input)
  chat:clear(title)
  require("sema.history").show(client, chat, function()
    if input and input ~= "" then
      chat:set_input(input)
    end
    api.nvim_exec_autocmds("User", { pattern = "SemaHistoryShown", data = { sessionId = chat.session_id } })
  end)
end

local RESTORE = {
  { restore = "both", text = "files and conversation" },
  { restore = "code", text = "files only (keep the conversation)" },
  { restore = "conversation", text = "conversation only (keep the files)" },
}

--- Go back to just before one of your messages: files, conversation or both. Files changed
--- since the agent wrote them are listed first; only "overwrite" rewinds over them.
--- Ask whether to overwrite the files a rewind or redo found changed (`conflicts` of
--- `session/rewind`); `overwrite` runs `on_overwrite`.
local function confirm_overwrite(conflicts, prompt, on_overwrite)
  local names = {}
  for _, c in ipairs(conflicts) do
    names[#names + 1] = c.path .. " (" .. c.reason .. ")"
  end
  pick.select({ "overwrite", "cancel" }, {
    prompt = "Sema: " .. prompt .. ": " .. table.concat(names, ", "),
    kind = "sema.rewind_conflict",
  }, function(choice)
    if choice == "overwrite" then
      on_overwrite()
    end
  end)
end

--- Reload the open buffers of the files a rewind or redo wrote.
local function reload_restored(chat, paths)
  for _, path in ipairs(paths or {}) do
    local abs = path:sub(1, 1) == "/" and path or vim.fs.joinpath(chat.working_dir, path)
    require("sema.changes").reload(abs)
  end
end

function M.rewind()
  with_chat(function(chat, client)
    if not has_method("session/rewind") then
      return notify("this sema-rpc has no session/rewind", vim.log.levels.WARN)
    end
    pick_prompt(chat, "rewind", function(p)
      pick.select(RESTORE, { prompt = "Sema: rewind what?", kind = "sema.rewind" }, function(r)
        local function go(force)
          local params = { sessionId = chat.session_id, messageId = p.id, restore = r.restore, force = force }
          client:request("session/rewind", params, function(err, result)
            if err then
              return notify("rewind failed: " .. (err.message or "?"), vim.log.levels.ERROR)
            end
            if not result.rewound then
              if #(result.conflicts or {}) == 0 then
                return notify("nothing to rewind")
              end
              return confirm_overwrite(result.conflicts, "changed since the agent wrote them", function()
                go(true)
              end)
            end
            reload_restored(chat, result.restoredFiles)
            local files = #(result.restoredFiles or {}) > 0
                and (" (restored " .. table.concat(result.restoredFiles, ", ") .. ")")
              or ""
            if r.restore == "code" then
              chat:append({ "", "— rewound the files to before “" .. p.text:sub(1, 60) .. "”" .. files .. " —" })
            else
              redraw(client, chat, "# Sema — rewound" .. files, result.input)
            end
          end)
        end
        go(false)
      end)
    end)
  end)
end

--- Undo the chat's last rewind (as long as nothing happened since); files changed since
--- the rewind are listed first, as for a rewind.
function M.redo()
  with_chat(function(chat, client)
    if not has_method("session/rewind") then
      return notify("this sema-rpc has no session/rewind", vim.log.levels.WARN)
    end
    local function go(force)
      local params = { sessionId = chat.session_id, redo = true, force = force }
      client:request("session/rewind", params, function(err, result)
        if err then
          return notify("redo failed: " .. (err.message or "?"), vim.log.levels.ERROR)
        end
        if not result.rewound then
          return confirm_overwrite(result.conflicts or {}, "changed since the rewind", function()
            go(true)
          end)
        end
        reload_restored(chat, result.restoredFiles)
        redraw(client, chat, "# Sema — redone (the last rewind is undone)")
      end)
    end
    go(false)
  end)
end

--- Continue from before one of your messages in a new chat (the original is kept).
function M.fork()
  with_chat(function(chat, client)
    if not has_method("session/fork") then
      return notify("this sema-rpc has no session/fork", vim.log.levels.WARN)
    end
    pick_prompt(chat, "fork", function(p)
      client:request("session/fork", { sessionId = chat.session_id, messageId = p.id }, function(err, result)
        if err then
          return notify("fork failed: " .. (err.message or "?"), vim.log.levels.ERROR)
        end
        local fork = register(result.sessionId, result.workingDir or chat.working_dir)
        fork.attached = true
        fork:ready(result)
        state.current = fork
        fork:show(chat)
        redraw(client, fork, "# Sema — fork of " .. chat.session_id, result.input)
      end)
    end)
  end)
end

--- The changes of the chat's last turn that changed files, as a diff in a new tab.
function M.diff()
  local chat = M.current()
  local turn = chat and chat.turn_diffs[#chat.turn_diffs]
  if not turn then
    return notify("no turn of this chat changed files yet")
  end
  local patch = turn.diff
  if not patch or patch == "" then
    local parts = {}
    for _, f in ipairs(turn.files) do
      parts[#parts + 1] = f.diff
    end
    patch = table.concat(parts, "\n")
  end
  vim.cmd("tabnew")
  local buf = api.nvim_get_current_buf()
  api.nvim_buf_set_lines(buf, 0, -1, true, vim.split(patch, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "diff"
  pcall(api.nvim_buf_set_name, buf, "sema://diff/" .. chat.session_id .. "/" .. #chat.turn_diffs)
end

-- ------------------------------------------------------------------- :Sema

local SUBCOMMANDS = {
  new = function(arg)
    M.new_chat({ model = arg ~= "" and arg or nil })
  end,
  resume = function()
    M.resume()
  end,
  attach = function(arg)
    require("sema.attach").attach(arg ~= "" and arg or nil)
  end,
  detach = function()
    require("sema.attach").detach()
  end,
  model = function()
    M.pick_model()
  end,
  rewind = function()
    M.rewind()
  end,
  redo = function()
    M.redo()
  end,
  fork = function()
    M.fork()
  end,
  diff = function()
    M.diff()
  end,
  mode = function(arg)
    M.set_mode(arg ~= "" and arg or nil)
  end,
  permissions = function(arg)
    M.set_permission_mode(arg ~= "" and arg or nil)
  end,
  sandbox = function(arg)
    M.set_sandbox(arg ~= "" and arg or nil)
  end,
  interrupt = function()
    M.interrupt()
  end,
  steer = function(arg)
    M.send(arg, { delivery = "steer" })
  end,
  ask = function(arg)
    M.send(arg)
  end,
  close = function()
    local chat = M.current()
    if chat then
      chat:close()
    end
  end,
  stop = function()
    M.stop()
  end,
  install = function()
    -- headless (a script, `nvim --headless "+Sema install" +qa`): wait for the end
    require("sema.install").install({ wait = #api.nvim_list_uis() == 0 })
  end,
}

-- which argument each subcommand takes: nil none, "word" one of a set, "text" free text
local ARGS = {
  new = "text",
  attach = "text",
  mode = { "Agent", "Plan" },
  permissions = { "default", "acceptEdits", "bypass" },
  sandbox = { "workspace-write", "read-only", "off" },
  steer = "text",
  ask = "text",
}

--- `:Sema [subcommand] [args]`; anything that is not a subcommand is a prompt.
function M.command(args)
  args = vim.trim(args or "")
  if args == "" then
    M.open()
    return
  end
  local word, rest = args:match("^(%S+)%s*(.*)$")
  local spec = ARGS[word]
  if type(spec) == "table" then
    -- `:Sema mode plan` means Plan
    for _, value in ipairs(spec) do
      if value:lower() == rest:lower() then
        rest = value
      end
    end
  end
  local is_sub = SUBCOMMANDS[word] ~= nil
    and (
      (spec == nil and rest == "")
      or spec == "text"
      or (type(spec) == "table" and (rest == "" or vim.tbl_contains(spec, rest)))
    )
  if is_sub and not (spec == "text" and word ~= "new" and word ~= "attach" and rest == "") then
    SUBCOMMANDS[word](rest)
    return
  end
  local chat = M.open()
  M.send(args, { chat = chat })
end

function M.complete_command(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = false })
  if #words <= 2 then
    return vim.tbl_filter(function(s)
      return s:find(arglead, 1, true) == 1
    end, vim.tbl_keys(SUBCOMMANDS))
  end
  local spec = ARGS[words[2]]
  if type(spec) == "table" and #words == 3 then
    return vim.tbl_filter(function(s)
      return s:find(arglead, 1, true) == 1
    end, spec)
  end
  return {}
end

return M
