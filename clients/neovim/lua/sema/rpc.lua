--- JSON-RPC 2.0 over the child's stdio, with LSP-style Content-Length framing.
---
--- Why not `vim.lsp.rpc`: its `server_request` dispatcher never sees the request id, so a
--- server-side `$/cancelRequest {id}` cannot be matched to the consent prompt it closes,
--- and it silently drops answers with code -32800. Here every id is ours to see, server
--- requests are answered asynchronously (a prompt never blocks the editor), and all
--- messages of one read are dispatched in one scheduled callback (never one per message).
local M = {}

---@class sema.RpcClient
---@field proc vim.SystemObj?
---@field next_id integer
---@field callbacks table<integer, fun(err: table?, result: any)>
---@field incoming table<any, {method: string, params: table, closed: boolean, on_cancel: fun()?}>
---@field buf string
---@field closed boolean
---@field stderr_tail string[]
local Client = {}
Client.__index = Client

local function empty_if_nil(params)
  if params == nil or (type(params) == "table" and next(params) == nil) then
    -- vim.json.encode({}) is `[]`: send an object.
    return vim.empty_dict()
  end
  return params
end

---@class sema.RpcHandlers
---@field on_notification fun(method: string, params: table)
---@field on_request fun(method: string, params: table, id: any)
---@field on_cancel fun(id: any, params: table, client: sema.RpcClient)? the server stopped waiting for
---request `id` (its params, and the client it came to: ids are the server's, unique per connection only)
---@field on_exit fun(code: integer, signal: integer, stderr: string, stopping: boolean)?

--- Spawn `cmd` and return a client.
---@param cmd string[]
---@param opts {env: table<string,string>?, cwd: string?}
---@param handlers sema.RpcHandlers
---@return sema.RpcClient
function M.start(cmd, opts, handlers)
  local self = setmetatable({
    next_id = 1,
    callbacks = {},
    incoming = {},
    buf = "",
    closed = false,
    stderr_tail = {},
    handlers = handlers,
  }, Client)
  self.proc = vim.system(cmd, {
    stdin = true,
    env = opts.env,
    cwd = opts.cwd,
    stdout = function(_, data)
      if data then
        self:_read(data)
      end
    end,
    stderr = function(_, data)
      if data then
        table.insert(self.stderr_tail, data)
        if #self.stderr_tail > 50 then
          table.remove(self.stderr_tail, 1)
        end
      end
    end,
  }, function(obj)
    vim.schedule(function()
      self:_on_exit(obj.code, obj.signal)
    end)
  end)
  return self
end

--- Connect to a server's listener: `endpoint` is `unix:/abs/path` or `tcp:127.0.0.1:PORT`.
--- `cb(err, client)` runs on the main loop once connected (before `initialize`: the caller
--- sends it, with the token a TCP listener wants). A unix path is connected to only when
--- it is a socket owned by this user; the end of the connection is `on_exit(0, 0, "", ...)`.
---@param endpoint string
---@param handlers sema.RpcHandlers
---@param cb fun(err: string?, client: sema.RpcClient?)
function M.connect(endpoint, handlers, cb)
  local kind, rest = endpoint:match("^(%a+):(.+)$")
  local self = setmetatable({
    next_id = 1,
    callbacks = {},
    incoming = {},
    buf = "",
    closed = false,
    stderr_tail = {},
    handlers = handlers,
    endpoint = endpoint,
  }, Client)
  local handle
  local function connected(err)
    vim.schedule(function()
      if err then
        pcall(handle.close, handle)
        return cb(("cannot connect to %s: %s"):format(endpoint, err), nil)
      end
      self.stream = handle
      handle:read_start(function(read_err, data)
        if data then
          self:_read(data)
        else
          pcall(handle.read_stop, handle)
          pcall(handle.close, handle)
          vim.schedule(function()
            if not self.closed then
              self:_on_exit(0, 0)
            end
          end)
        end
        if read_err then
          table.insert(self.stderr_tail, read_err)
        end
      end)
      cb(nil, self)
    end)
  end
  if kind == "unix" then
    local st = vim.uv.fs_lstat(rest)
    if not st then
      return cb("no server listens on " .. rest, nil)
    end
    if st.type ~= "socket" then
      return cb(rest .. " is not a socket: not connecting", nil)
    end
    if st.uid ~= vim.uv.getuid() then
      return cb(rest .. " belongs to another user: not connecting", nil)
    end
    handle = vim.uv.new_pipe(false)
    handle:connect(rest, connected)
  elseif kind == "tcp" then
    local host, port = rest:match("^%[?([^%]]*)%]?:(%d+)$")
    if not host then
      return cb("not an endpoint: " .. endpoint, nil)
    end
    handle = vim.uv.new_tcp()
    handle:connect(host, tonumber(port), connected)
  else
    cb("not an endpoint: " .. endpoint .. " (unix:PATH or tcp:127.0.0.1:PORT)", nil)
  end
end

--- Parse every complete frame of `data` (called in a fast event) and dispatch them together.
function Client:_read(data)
  local buf = self.buf .. data
  local messages = {}
  local pos = 1
  while true do
    local header_end = buf:find("\r\n\r\n", pos, true)
    if not header_end then
      break
    end
    local length = tonumber(buf:sub(pos, header_end - 1):match("[Cc]ontent%-[Ll]ength:%s*(%d+)"))
    local body_start = header_end + 4
    if not length then
      -- a frame without a length cannot be skipped safely: drop what we have
      pos = body_start
    else
      if #buf < body_start + length - 1 then
        break
      end
      local ok, msg = pcall(vim.json.decode, buf:sub(body_start, body_start + length - 1), {
        luanil = { object = true, array = true },
      })
      if ok and type(msg) == "table" then
        messages[#messages + 1] = msg
      end
      pos = body_start + length
    end
  end
  self.buf = buf:sub(pos)
  if #messages > 0 then
    vim.schedule(function()
      for _, msg in ipairs(messages) do
        self:_dispatch(msg)
      end
    end)
  end
end

function Client:_dispatch(msg)
  if msg.method then
    if msg.id ~= nil then
      self.incoming[msg.id] = { method = msg.method, params = msg.params or {}, closed = false }
      self.handlers.on_request(msg.method, msg.params or {}, msg.id)
    elseif msg.method == "$/cancelRequest" then
      local id = msg.params and msg.params.id
      local pending = id ~= nil and self.incoming[id]
      if pending then
        pending.closed = true
        self.incoming[id] = nil
        if self.handlers.on_cancel then
          self.handlers.on_cancel(id, pending.params, self)
        end
      end
    else
      self.handlers.on_notification(msg.method, msg.params or {})
    end
  elseif msg.id ~= nil then
    local cb = self.callbacks[msg.id]
    self.callbacks[msg.id] = nil
    if cb then
      cb(msg.error, msg.result)
    end
  end
end

function Client:_on_exit(code, signal)
  self.closed = true
  local callbacks = self.callbacks
  self.callbacks = {}
  for _, cb in pairs(callbacks) do
    cb({ code = -32099, message = "sema-rpc exited" }, nil)
  end
  if self.handlers.on_exit then
    self.handlers.on_exit(code, signal, table.concat(self.stderr_tail), self.stopping == true)
  end
end

function Client:_write(msg)
  local sink = self.proc or self.stream
  if self.closed or not sink then
    return false
  end
  local body = vim.json.encode(msg)
  local ok = pcall(sink.write, sink, ("Content-Length: %d\r\n\r\n%s"):format(#body, body))
  return ok
end

--- Send a request; `callback(err, result)` runs on the main loop.
---@param method string
---@param params table?
---@param callback fun(err: table?, result: any)?
---@return integer? id
function Client:request(method, params, callback)
  local id = self.next_id
  self.next_id = id + 1
  self.callbacks[id] = callback or function() end
  if not self:_write({ jsonrpc = "2.0", id = id, method = method, params = empty_if_nil(params) }) then
    self.callbacks[id] = nil
    if callback then
      callback({ code = -32099, message = "sema-rpc is not running" }, nil)
    end
    return nil
  end
  return id
end

--- Send a request and wait for its answer (for `:checkhealth` and scripts).
---@return table? err, any result
function Client:request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms or 10000, function()
    return done
  end, 10) then
    return { code = -32098, message = method .. " timed out" }, nil
  end
  return err, result
end

function Client:notify(method, params)
  return self:_write({ jsonrpc = "2.0", method = method, params = empty_if_nil(params) })
end

--- Answer a server→client request. Returns false when the server no longer waits for it.
---@param id any
---@param result table?
---@param err table?
---@return boolean
function Client:respond(id, result, err)
  local pending = self.incoming[id]
  if not pending or pending.closed then
    return false
  end
  self.incoming[id] = nil
  if err then
    return self:_write({ jsonrpc = "2.0", id = id, error = err })
  end
  return self:_write({ jsonrpc = "2.0", id = id, result = empty_if_nil(result) })
end

--- Is the server still waiting for the answer to request `id`?
function Client:waiting(id)
  local pending = self.incoming[id]
  return pending ~= nil and not pending.closed
end

function Client:is_running()
  return not self.closed
end

--- Close a socket connection (the server keeps its sessions going).
function Client:disconnect()
  if self.stream and not self.closed then
    self.stopping = true
    local stream = self.stream
    pcall(stream.read_stop, stream)
    pcall(stream.close, stream)
    self:_on_exit(0, 0)
  end
end

--- `shutdown`, then close stdin (an orderly exit), then kill after `timeout_ms`.
function Client:stop(timeout_ms)
  if self.stream then
    return self:disconnect()
  end
  if self.closed or not self.proc then
    return
  end
  local proc = self.proc
  self.stopping = true
  self:request("shutdown", nil, function()
    self:notify("exit")
    pcall(proc.write, proc, nil)
  end)
  vim.defer_fn(function()
    if not self.closed then
      pcall(proc.kill, proc, 15)
    end
  end, timeout_ms or 5000)
end

M.Client = Client
return M
