--- The server this plugin installs for itself (`:Sema install`, lazy.nvim's `build`): the
--- sema-rpc of the plugin's own checkout, installed into a private virtualenv under
--- `stdpath("data")/sema/`, with a Python >= 3.11 found on PATH (or uv). Each install is a
--- new venv made current by an atomic rename of `server.json`: a venv cannot be moved, and a
--- running server keeps its files.
---
--- Where the server comes from (`M.resolve`): `cmd` from setup(), else `sema-rpc` on PATH,
--- else the private install.
local config = require("sema.config")

local M = {}

M.MIN_PYTHON = { 3, 11 }
local uv = vim.uv or vim.loop
local WIN = vim.fn.has("win32") == 1

--- `stdpath("data")/sema`: the venvs, `server.json` naming the current one, `install.log`.
function M.dir()
  return vim.fn.stdpath("data") .. "/sema"
end

--- The repository this plugin is part of (clients/neovim is two levels below its root).
function M.repo()
  local here = debug.getinfo(1, "S").source:sub(2)
  local root = vim.fn.fnamemodify(here, ":p:h:h:h:h:h")
  if vim.fn.filereadable(root .. "/pyproject.toml") == 1 then
    return root
  end
  return nil
end

local function venv_bin(venv, name)
  if WIN then
    return venv .. "/Scripts/" .. name .. ".exe"
  end
  return venv .. "/bin/" .. name
end

local function read_state()
  local path = M.dir() .. "/server.json"
  if vim.fn.filereadable(path) ~= 1 then
    return nil
  end
  local ok, state = pcall(vim.json.decode, table.concat(vim.fn.readfile(path), "\n"))
  if ok and type(state) == "table" and type(state.venv) == "string" then
    return state
  end
  return nil
end

--- The private install's `sema-rpc` and its state ({venv, version, python}), or nil.
function M.server()
  local state = read_state()
  if not state then
    return nil
  end
  local exe = venv_bin(M.dir() .. "/" .. state.venv, "sema-rpc")
  if vim.fn.executable(exe) == 1 then
    return exe, state
  end
  return nil
end

--- The server command and where it comes from ("setup", "PATH", "private install"), or nil
--- and a message saying what to do.
function M.resolve()
  local cmd = config.options.cmd
  if cmd then
    if vim.fn.executable(cmd[1]) ~= 1 then
      return nil, ("server command not found: %s (`cmd` in setup(); see :checkhealth sema)"):format(cmd[1])
    end
    return cmd, "setup", vim.fn.exepath(cmd[1])
  end
  local on_path = vim.fn.exepath("sema-rpc")
  if on_path ~= "" then
    return { "sema-rpc" }, "PATH", on_path
  end
  local private = M.server()
  if private then
    return { private }, "private install", private
  end
  return nil, "sema-rpc not found: run :Sema install (or put sema-rpc on PATH, or set `cmd` in setup())"
end

--- Version tuple of a Python command, and its sys.executable, or nil. Isolated (`-I`) and
--- outside the working folder: a project's files are never imported.
local function probe(python)
  local ok, res = pcall(function()
    return vim
      .system({ python, "-I", "-c", "import sys; print(*sys.version_info[:3], sys.executable)" }, {
        text = true,
        cwd = M.dir(),
      })
      :wait(15000)
  end)
  if not ok or res.code ~= 0 then
    return nil
  end
  local a, b, c, exe = (res.stdout or ""):match("^(%d+) (%d+) (%d+) (.-)%s*$")
  if not a then
    return nil
  end
  return { version = { tonumber(a), tonumber(b), tonumber(c) }, executable = exe, command = python }
end

local function suitable(version)
  return version[1] > M.MIN_PYTHON[1] or (version[1] == M.MIN_PYTHON[1] and version[2] >= M.MIN_PYTHON[2])
end

--- The first Python >= 3.11 (setup's `python`, then python3, python3.X, python on PATH), every
--- interpreter looked at, and `uv` when on PATH.
function M.find_python()
  local names = { "python3", "python3.14", "python3.13", "python3.12", "python3.11", "python" }
  if config.options.python then
    table.insert(names, 1, config.options.python)
  end
  local seen, executables, found = {}, {}, nil
  vim.fn.mkdir(M.dir(), "p")
  for _, name in ipairs(names) do
    if vim.fn.executable(name) == 1 then
      local info = probe(name)
      if info and not executables[info.executable] then
        executables[info.executable] = true
        seen[#seen + 1] = info
        if suitable(info.version) then
          found = info
          break
        end
      end
    end
  end
  local uv_exe = vim.fn.exepath("uv")
  return { found = found, seen = seen, uv = uv_exe ~= "" and uv_exe or nil }
end

local function describe_seen(seen)
  if #seen == 0 then
    return "no Python was found on PATH"
  end
  local parts = {}
  for _, p in ipairs(seen) do
    parts[#parts + 1] = ("%s (%s)"):format(p.executable, table.concat(p.version, "."))
  end
  return "found " .. table.concat(parts, ", ")
end

local function pid_alive(pid)
  local ok, err = pcall(uv.kill, pid, 0)
  return ok and err == 0
end

--- Take the install lock (a directory); false and the owner's pid when another Neovim holds it.
local function lock(dir)
  local path = dir .. "/install.lock"
  for _ = 1, 2 do
    if uv.fs_mkdir(path, 448) then
      vim.fn.writefile({ tostring(uv.os_getpid()) }, path .. "/owner")
      return true
    end
    local owner = tonumber((vim.fn.readfile(path .. "/owner")[1] or ""))
    if owner and pid_alive(owner) then
      return false, owner
    end
    vim.fn.delete(path, "rf")
  end
  return false
end

local function unlock(dir)
  vim.fn.delete(dir .. "/install.lock", "rf")
end

local function notify(msg, level)
  vim.notify("sema: " .. msg, level or vim.log.levels.INFO)
end

--- Install (or upgrade) the private server. `opts.wait`: block until done (headless Neovim,
--- lazy.nvim's build). `opts.on_done(err, result)`; result = {path, version}. Returns the
--- result (or nil, err) when waiting.
function M.install(opts)
  opts = opts or {}
  local result, failure, finished = nil, nil, false
  local dir = M.dir()
  local function done(err, res)
    finished = true
    unlock(dir)
    failure, result = err, res
    if err then
      notify("install failed: " .. err .. " (log: " .. dir .. "/install.log)", vim.log.levels.ERROR)
    else
      notify(("server %s installed: %s"):format(res.version, res.path))
      vim.api.nvim_exec_autocmds("User", { pattern = "SemaInstalled", data = res })
    end
    if opts.on_done then
      opts.on_done(err, res)
    end
  end

  -- refused before anything started: said once, reported to on_done, nothing to clean up
  local function refuse(err, level)
    notify("cannot install the server: " .. err, level or vim.log.levels.ERROR)
    if opts.on_done then
      opts.on_done(err, nil)
    end
    return nil, err
  end
  local repo = M.repo()
  if not repo then
    return refuse("this copy of the plugin is not inside a sema-rpc checkout")
  end
  local python = M.find_python()
  if not python.found and not python.uv then
    return refuse(
      ("it needs Python %d.%d or newer (or uv) and %s"):format(
        M.MIN_PYTHON[1],
        M.MIN_PYTHON[2],
        describe_seen(python.seen)
      )
    )
  end
  vim.fn.mkdir(dir, "p")
  local locked, owner = lock(dir)
  if not locked then
    return refuse(("another Neovim (pid %s) is installing it"):format(owner or "?"), vim.log.levels.WARN)
  end

  -- pip builds the checkout in place and setuptools reuses build/lib (git-ignored): a module
  -- deleted by an update would ship again
  vim.fn.delete(repo .. "/build", "rf")
  local name = ("venv-%d-%d"):format(os.time(), uv.os_getpid())
  local venv = dir .. "/" .. name
  local log_path = dir .. "/install.log"
  local log = io.open(log_path, "w")
  local previous = read_state()
  local steps = {}
  if python.uv then
    local which = python.found and python.found.executable or (">=%d.%d"):format(M.MIN_PYTHON[1], M.MIN_PYTHON[2])
    steps[1] = { "creating a Python environment (uv)", { python.uv, "venv", "--python", which, venv } }
    steps[2] = {
      "installing sema-rpc and its dependencies",
      { python.uv, "pip", "install", "--python", venv_bin(venv, "python"), repo },
    }
  else
    local v = python.found.version
    steps[1] = {
      ("creating a Python %d.%d environment"):format(v[1], v[2]),
      { python.found.executable, "-m", "venv", venv },
    }
    steps[2] = {
      "installing sema-rpc and its dependencies",
      { venv_bin(venv, "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", repo },
    }
  end
  steps[3] = { "checking the server", { venv_bin(venv, "sema-rpc"), "--version" } }

  local function finish(version_line)
    local version = version_line:match("sema%-rpc (%S+)") or "?"
    local state = { venv = name, version = version, repo = repo, installedAt = os.date("!%Y-%m-%dT%H:%M:%SZ") }
    local tmp = dir .. "/server.json." .. uv.os_getpid()
    vim.fn.writefile({ vim.json.encode(state) }, tmp)
    assert(uv.fs_rename(tmp, dir .. "/server.json"))
    -- keep the previous venv (a running server may use it), remove older ones
    for entry, kind in vim.fs.dir(dir) do
      if kind == "directory" and entry:match("^venv%-") and entry ~= name and entry ~= (previous and previous.venv) then
        vim.fn.delete(dir .. "/" .. entry, "rf")
      end
    end
    return { path = venv_bin(venv, "sema-rpc"), version = version }
  end

  local i = 0
  local function next_step(prev_out)
    i = i + 1
    local step = steps[i]
    if not step then
      if log then
        log:close()
      end
      local ok, res = pcall(finish, prev_out or "")
      return done(not ok and tostring(res) or nil, ok and res or nil)
    end
    notify(step[1] .. "…")
    if log then
      log:write("$ " .. table.concat(step[2], " ") .. "\n")
    end
    -- cwd: our own folder, never the project's (`python -m venv` would import its venv.py)
    local ok, err = pcall(vim.system, step[2], { text = true, cwd = dir }, function(res)
      vim.schedule(function()
        local out = (res.stdout or "") .. (res.stderr or "")
        if log then
          log:write(out)
        end
        if res.code ~= 0 then
          if log then
            log:close()
          end
          vim.fn.delete(venv, "rf")
          local tail = vim.split(vim.trim(out), "\n")
          return done(("%s failed (exit %d): %s"):format(step[1], res.code, tail[#tail] or ""))
        end
        next_step(res.stdout or "")
      end)
    end)
    if not ok then
      vim.fn.delete(venv, "rf")
      done(tostring(err))
    end
  end
  next_step()

  if opts.wait then
    vim.wait(opts.timeout_ms or 15 * 60 * 1000, function()
      return finished
    end, 50)
    if not finished then
      return nil, "timed out"
    end
    return result, failure
  end
  return nil
end

--- For lazy.nvim's `build`: install, blocking, and raise on failure (lazy shows the error).
function M.build()
  local res, err = M.install({ wait = true })
  if not res then
    error("sema: installing the server failed: " .. tostring(err))
  end
  return res
end

return M
