--- `:Sema attach [SESSION]`: a chat on a session another sema-rpc process hosts (a
--- `sema-rpc serve`, a server started with `--listen`, a `sema-rpc run --listen` one-shot).
---
--- Such a server writes `$SEMA_ROOT/run/<pid>.json` (its endpoint, the token file of a TCP
--- listener); the files of dead processes are skipped. Each live server is asked for its
--- live sessions (`session/list` entries marked `live`); the chosen one opens in the same
--- chat buffer as a spawned session, over its own connection (`vim.uv` pipe or TCP):
--- the earlier conversation drawn (`session/messages`), then `session/attach` and the live
--- stream; consent, questions and plan approvals are asked in place. Closing the
--- connection (`:Sema detach`, or leaving Neovim) leaves the session running.
local api = vim.api
local rpc = require("sema.rpc")
local M = {}

---@type table<string, sema.RpcClient> connections by endpoint
local connections = {}

local function notify(msg, level)
  vim.notify("Sema: " .. msg, level or vim.log.levels.INFO)
end

--- `$SEMA_ROOT/run`, else `~/.sema/run`.
function M.run_dir()
  local root = vim.env.SEMA_ROOT
  if not root or root == "" then
    root = vim.fs.joinpath(vim.uv.os_homedir() or "~", ".sema")
  end
  return vim.fs.joinpath(vim.fs.normalize(root), "run")
end

local function pid_alive(pid)
  if type(pid) ~= "number" or pid <= 0 then
    return false
  end
  local rc, msg = vim.uv.kill(pid, 0)
  if rc == 0 then
    return true
  end
  return type(msg) == "string" and msg:find("EPERM", 1, true) ~= nil
end

--- The live servers described under `run_dir()`: {pid, endpoint, tokenFile?, cwd?}.
---@param dir string?
---@return table[]
function M.servers(dir)
  dir = dir or M.run_dir()
  local out = {}
  for name, kind in vim.fs.dir(dir) do
    if kind == "file" and name:match("%.json$") then
      local fd = io.open(vim.fs.joinpath(dir, name), "r")
      local text = fd and fd:read("*a")
      if fd then
        fd:close()
      end
      local ok, info = pcall(vim.json.decode, text or "", { luanil = { object = true, array = true } })
      if ok and type(info) == "table" and type(info.endpoint) == "string" and pid_alive(info.pid) then
        out[#out + 1] = info
      end
    end
  end
  table.sort(out, function(a, b)
    return (a.startedAt or "") > (b.startedAt or "")
  end)
  return out
end

local function read_token(path)
  local fd = path and io.open(path, "r")
  if not fd then
    return nil
  end
  local token = vim.trim(fd:read("*a") or "")
  fd:close()
  return token
end

local function route(client)
  local sema = require("sema")
  local function chat_of(params)
    local chat = sema._state.chats[(params or {}).sessionId or ""]
    return chat and chat.remote == client and chat or nil
  end
  return {
    on_notification = function(method, params)
      local chat = chat_of(params)
      if not chat then
        return
      end
      if method == "request:resolved" then
        local who = params.answeredBy or "another client"
        local outcome = type(params.outcome) == "string" and (": " .. params.outcome) or ""
        chat:append({ "  ✓ answered by " .. who .. outcome })
        api.nvim_exec_autocmds("User", { pattern = "SemaRequestResolved", data = params })
      elseif method == "session:ready" then
        chat:ready(params)
      else
        chat:on_event(method, params)
      end
    end,
    on_request = function(method, params, id)
      require("sema.consent").handle(client, chat_of(params), method, params, id)
    end,
    on_cancel = function(id, params)
      require("sema.consent").cancelled(id, client, params.sessionId)
    end,
  }
end

--- A connection to `server` (kept per endpoint), initialized; `cb(err, client)`.
local function connect(server, cb)
  local existing = connections[server.endpoint]
  if existing and existing:is_running() and existing.init then
    return cb(nil, existing)
  end
  local client
  local handlers = {}
  rpc.connect(server.endpoint, handlers, function(err, c)
    if err then
      return cb(err)
    end
    client = c
    for k, v in pairs(route(client)) do
      handlers[k] = v
    end
    handlers.on_exit = function(_, _, _, stopping)
      if connections[server.endpoint] == client then
        connections[server.endpoint] = nil
      end
      for _, chat in pairs(require("sema")._state.chats) do
        if chat.remote == client then
          chat.state = "idle"
          chat.turn_open = false
          if not stopping then
            chat:append({ "", "— the server of this session went away —" })
          end
          chat:_winbar()
        end
      end
    end
    local params = {
      protocolVersion = 1,
      clientInfo = { name = "sema.nvim", version = require("sema").version },
      capabilities = { permissions = true, askQuestion = true, planExit = true },
    }
    if server.endpoint:match("^tcp:") then
      params.token = read_token(server.tokenFile)
      if not params.token then
        client:disconnect()
        return cb(server.endpoint .. " needs a token and its token file cannot be read")
      end
    end
    client:request("initialize", params, function(ierr, result)
      if ierr then
        client:disconnect()
        return cb("the server refused the connection: " .. (ierr.message or "?"))
      end
      client.init = result
      connections[server.endpoint] = client
      cb(nil, client)
    end)
  end)
end

--- Every live session of every live server; `cb(sessions, problems)` where each session is
--- a `session/list` entry plus `server`.
function M.live_sessions(cb)
  local servers = M.servers()
  local sessions, problems = {}, {}
  local left = #servers
  if left == 0 then
    return cb(sessions, problems)
  end
  local function one_done()
    left = left - 1
    if left == 0 then
      cb(sessions, problems)
    end
  end
  for _, server in ipairs(servers) do
    connect(server, function(err, client)
      if err then
        problems[#problems + 1] = err
        return one_done()
      end
      client:request("session/list", {}, function(lerr, result)
        if lerr then
          problems[#problems + 1] = server.endpoint .. ": " .. (lerr.message or "?")
        else
          for _, item in ipairs((result or {}).sessions or {}) do
            if item.live then
              item.server = server
              sessions[#sessions + 1] = item
            end
          end
        end
        one_done()
      end)
    end)
  end
end

local function format_item(s)
  return ("%s  [%s]  %s  (pid %s)"):format(
    (s.title or "(no prompt yet)"):gsub("\n", " "):sub(1, 60),
    s.state or "live",
    vim.fn.fnamemodify(s.workingDir or s.server.cwd or "", ":~"),
    tostring(s.server.pid)
  )
end

--- Open a chat on `item` (a live session from `live_sessions`).
function M.open(item)
  local sema = require("sema")
  local state = sema._state
  local existing = state.chats[item.sessionId]
  if existing and existing.remote and existing.remote:is_running() and existing.attached then
    state.current = existing
    existing:show()
    return existing
  end
  connect(item.server, function(err, client)
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    local chat = existing
      or sema._register(item.sessionId, item.workingDir or item.server.cwd or vim.fn.getcwd())
    chat.remote = client
    chat.attached = true
    local previous = state.current
    state.current = chat
    chat:show(previous)
    local title = ("# Sema — attached: %s (pid %s)"):format(item.title or item.sessionId, tostring(item.server.pid))
    if existing then
      chat:clear(title) -- attached again: drawn afresh from the server
    else
      chat:append({ title })
    end
    local function attach_now()
      client:request("session/attach", { sessionId = item.sessionId }, function(aerr, result)
        if aerr then
          chat.attached = false
          chat:append({ "Could not attach: " .. (aerr.message or "?") })
          return
        end
        chat:ready({
          workingDir = result.workingDir,
          mode = result.mode,
          permissionMode = result.permissionMode,
          model = result.model,
        })
        chat.state = result.state or "idle"
        if chat.state == "processing" then
          chat:on_turn_start()
        end
        local waiting = #(result.pendingRequests or {})
        chat:append({
          ("— attached (%s%s%s) —"):format(
            chat.state,
            (result.queuedPrompts or 0) > 0 and (", " .. result.queuedPrompts .. " queued") or "",
            waiting > 0 and (", " .. waiting .. " waiting for an answer") or ""
          ),
        })
        chat:_winbar()
        api.nvim_exec_autocmds("User", {
          pattern = "SemaAttached",
          data = { sessionId = chat.session_id, result = result },
        })
      end)
    end
    require("sema.history").show(client, chat, function()
      api.nvim_exec_autocmds("User", { pattern = "SemaHistoryShown", data = { sessionId = chat.session_id } })
      attach_now()
    end)
  end)
end

--- `:Sema attach [SESSION]`: the session named (an id or a unique prefix), the only live
--- one, or one picked with `vim.ui.select`.
---@param wanted string?
function M.attach(wanted)
  M.live_sessions(function(sessions, problems)
    for _, p in ipairs(problems) do
      notify(p, vim.log.levels.WARN)
    end
    if wanted then
      local found = {}
      for _, s in ipairs(sessions) do
        if s.sessionId == wanted then
          found = { s }
          break
        end
        if s.sessionId:find(wanted, 1, true) == 1 then
          found[#found + 1] = s
        end
      end
      if #found ~= 1 then
        return notify("no live session " .. wanted .. (#found > 1 and " (several match)" or ""), vim.log.levels.WARN)
      end
      return M.open(found[1])
    end
    if #sessions == 0 then
      return notify("no live session (a server started with --listen, `sema-rpc serve` or `run --listen`)")
    end
    vim.ui.select(sessions, {
      prompt = "Attach to a running Sema session",
      kind = "sema.live_session",
      format_item = format_item,
    }, function(item)
      if item then
        M.open(item)
      end
    end)
  end)
end

--- Leave the current chat's session (it goes on in its server).
function M.detach()
  local sema = require("sema")
  local chat = sema.current()
  if not chat or not chat.remote then
    return notify("this chat is not attached to another process's session", vim.log.levels.WARN)
  end
  local client = chat.remote
  client:request("session/detach", { sessionId = chat.session_id }, function() end)
  chat.attached = false
  chat:append({ "", "— detached; the session goes on —" })
end

return M
