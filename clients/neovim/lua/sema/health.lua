--- `:checkhealth sema`: the server (and where it was found), its version, the model a new session gets, and
--- whether its API key is set (never its value).
local config = require("sema.config")

local M = {}

local KEY_VARS = {
  anthropic = { "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN" },
  openai = { "OPENAI_API_KEY" },
}

local function env(name)
  local v = config.options.env[name]
  if v == nil then
    v = vim.env[name]
  end
  return v
end

--- Ask a short-lived `sema-rpc --jsonl` which model a session in the current directory
--- gets (`session:ready.model`, or `config:no_models`). Writes nothing to disk: a session
--- is saved only once it has a message.
local function probe(cmd)
  local out = { stderr = "" }
  local pending = ""
  local function on_line(line)
    local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
    if not ok or type(msg) ~= "table" then
      return
    end
    if msg.id == 1 then
      out.init = msg.result
    elseif msg.id == 2 then
      out.ready, out.create_error, out.created = msg.result, msg.error, true
    elseif msg.method == "config:no_models" then
      out.no_models = msg.params
    end
  end
  local full = vim.list_extend(vim.deepcopy(cmd), { "--jsonl" })
  local ok, proc = pcall(vim.system, full, {
    stdin = true,
    text = true,
    env = next(config.options.env) and config.options.env or nil,
    stdout = function(_, data)
      pending = pending .. (data or "")
      while true do
        local nl = pending:find("\n", 1, true)
        if not nl then
          break
        end
        local line = pending:sub(1, nl - 1)
        pending = pending:sub(nl + 1)
        vim.schedule(function()
          on_line(line)
        end)
      end
    end,
    stderr = function(_, data)
      out.stderr = out.stderr .. (data or "")
    end,
  })
  if not ok then
    return nil, tostring(proc)
  end
  local function send(msg)
    msg.jsonrpc = "2.0"
    proc:write(vim.json.encode(msg) .. "\n")
  end
  send({ id = 1, method = "initialize", params = { clientInfo = { name = "checkhealth" } } })
  send({ id = 2, method = "session/create", params = { workingDir = vim.fn.getcwd() } })
  vim.wait(20000, function()
    return out.created == true or proc:is_closing()
  end, 20)
  -- closing stdin is an orderly shutdown
  pcall(proc.write, proc, nil)
  pcall(proc.wait, proc, 5000)
  return out
end

local function read_models_json()
  local root = env("SEMA_ROOT") or (vim.env.HOME .. "/.sema")
  local path = root .. "/models.json"
  if not vim.uv.fs_stat(path) then
    return nil
  end
  local ok, data = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(path), "\n"))
  end)
  return ok and data or nil
end

function M.check()
  local h = vim.health
  h.start("sema: Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.10 or newer is needed")
  end

  h.start("sema: server")
  local install = require("sema.install")
  local cmd, source, exe = install.resolve()
  if not cmd then
    h.error(source, {
      "Run :Sema install (a private environment under " .. install.dir() .. ")",
      "or put sema-rpc on PATH, or set `cmd` in require('sema').setup({...})",
    })
    return
  end
  h.ok(("server (%s): %s (%s)"):format(source, table.concat(cmd, " "), exe))
  local ok, res = pcall(function()
    return vim.system(vim.list_extend(vim.deepcopy(cmd), { "--version" }), { text = true }):wait(20000)
  end)
  if ok and res.code == 0 then
    h.ok("version: " .. vim.trim(res.stdout or ""))
  else
    local why = ok and (res.stderr or "") or tostring(res)
    h.warn("`" .. table.concat(cmd, " ") .. " --version` failed: " .. vim.trim(why))
  end
  local private, state = install.server()
  if private and source ~= "private install" then
    h.info(("a private install (%s) is there too, unused: %s"):format(state.version, private))
  end
  local result, err = probe(cmd)
  if not result or not result.init then
    local why = err or vim.trim((result and result.stderr) or ""):sub(-400)
    h.error("the server did not answer `initialize`: " .. why)
    return
  end
  local info = result.init.serverInfo or {}
  local protocol = tostring(result.init.protocolVersion)
  h.ok(("%s %s, protocol %s"):format(info.name or "sema-rpc", info.version or "?", protocol))
  local methods = (result.init.capabilities or {}).methods or {}
  if not vim.tbl_contains(methods, "model/list") then
    h.info("this server cannot list or switch models (`:Sema model` says so; `:Sema new {model}` works)")
  end

  local sandbox = (result.ready or {}).sandbox
  if type(sandbox) == "table" then
    h.start("sema: sandbox")
    if sandbox.available == false then
      h.warn("commands run unconfined: " .. (sandbox.reason or "no OS sandbox here"))
    else
      h.ok(
        ("commands run in the `%s` OS sandbox by default (`:Sema sandbox` changes it)"):format(
          sandbox.mode or "?"
        )
      )
    end
  end

  h.start("sema: running servers (:Sema attach)")
  local attach = require("sema.attach")
  local servers = attach.servers()
  if #servers == 0 then
    h.info("no running server to attach to in " .. attach.run_dir())
  else
    for _, server in ipairs(servers) do
      h.ok(("pid %s listens on %s%s"):format(
        tostring(server.pid),
        server.endpoint,
        server.cwd and (" (" .. vim.fn.fnamemodify(server.cwd, ":~") .. ")") or ""
      ))
    end
  end

  h.start("sema: model")
  if result.create_error then
    h.error("session/create failed: " .. (result.create_error.message or "?"))
    return
  end
  local model = (result.ready or {}).model or config.options.model
  if config.options.model then
    h.ok("model (from setup): " .. config.options.model)
  elseif model then
    h.ok("model (the server's default): " .. model)
  else
    local msg = result.no_models and result.no_models.message or "no model configured"
    h.error(msg, result.no_models and result.no_models.suggestion or nil)
    return
  end

  -- which provider's key this model needs
  local provider = model:match("^([%w%-]+)/")
  local key_in_profile = false
  if not provider or (provider ~= "anthropic" and provider ~= "openai" and provider ~= "replay") then
    local data = read_models_json()
    local profiles = data and data.profiles or {}
    local pointers = data and data.pointers or {}
    local profile = type(profiles) == "table" and (profiles[model] or profiles[pointers[model] or ""]) or nil
    if type(profile) == "table" then
      key_in_profile = profile.apiKey ~= nil and profile.apiKey ~= ""
      local spec = profile.provider or (type(profile.model) == "string" and profile.model:match("^([%w%-]+)/"))
      provider = spec and spec:match("^(%a+)") or provider
    end
  end
  if provider == "replay" then
    h.ok("a recorded model: no API key needed")
    return
  end
  if key_in_profile then
    h.ok("API key: set in models.json for `" .. model .. "`")
    return
  end
  local vars = KEY_VARS[provider or ""] or {}
  for _, var in ipairs(vars) do
    local v = env(var)
    if v and v ~= "" then
      h.ok(("API key: %s is set (%d characters)"):format(var, #v))
      return
    end
  end
  if #vars > 0 then
    h.error(
      "API key: " .. table.concat(vars, " or ") .. " is not set",
      { "Export it before starting Neovim, or set it in setup({ env = {...} })" }
    )
  else
    h.warn("cannot tell which API key `" .. model .. "` needs")
  end
end

return M
