--- Completion in the chat input: `@path` (files and folders of the session's workspace)
--- and `/command` (`/clear`, `/compact` and the project's and user's custom commands from
--- `command/list`). It is an 'omnifunc' (also set as 'completefunc'), so `<C-x><C-o>`,
--- nvim-cmp's omni source and blink.cmp's omni source all use it.
local M = {}

local MAX_FILES = 5000
local SKIP = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }

local BUILTIN = {
  { name = "clear", description = "Start a new, empty context (the history file keeps everything)" },
  { name = "compact", description = "Summarise the conversation now", argumentHint = "[instructions]" },
}

--- Workspace paths (relative, folders with a trailing `/`), at most MAX_FILES, breadth-first.
function M.workspace_paths(root)
  local out = {}
  local dirs = { "" }
  local i = 1
  while i <= #dirs and #out < MAX_FILES do
    local rel = dirs[i]
    i = i + 1
    local handle = vim.uv.fs_scandir(root .. "/" .. rel)
    while handle and #out < MAX_FILES do
      local name, kind = vim.uv.fs_scandir_next(handle)
      if not name then
        break
      end
      if kind == "directory" then
        if not SKIP[name] then
          out[#out + 1] = rel .. name .. "/"
          dirs[#dirs + 1] = rel .. name .. "/"
        end
      else
        out[#out + 1] = rel .. name
      end
    end
  end
  table.sort(out)
  return out
end

local function chat_of_buffer()
  local sid = vim.b.sema_session
  local sema = require("sema")
  return sid and sema._state.chats[sid] or sema.current()
end

--- The command list of the chat's project (asked once per completion, 1 s at most).
local function commands(chat)
  local items = vim.deepcopy(BUILTIN)
  local sema = require("sema")
  local client = sema._state.client
  if chat and client and client:is_running() then
    local err, result = client:request_sync("command/list", { workingDir = chat.working_dir }, 1000)
    if not err and result then
      vim.list_extend(items, result.commands or {})
    end
  end
  return items
end

--- Where the token under the cursor starts (0-based byte column), and its trigger.
local function token_start(line, col)
  local start = col
  while start > 0 do
    local c = line:sub(start, start)
    if c:match("%s") then
      break
    end
    start = start - 1
  end
  local word = line:sub(start + 1, col)
  local first = word:sub(1, 1)
  if first == "@" then
    return start, "@"
  end
  if first == "/" then
    -- a command only at the start of the input (after the prompt text)
    local prompt = vim.bo.buftype == "prompt" and vim.fn.prompt_getprompt(vim.api.nvim_get_current_buf()) or ""
    if vim.trim(line:sub(#prompt + 1, start)) == "" then
      return start, "/"
    end
  end
  return nil, nil
end

--- The completion items for `base` (`@src/ma`, `/rev`), in the shape of `complete-items`.
function M.items(base, chat)
  local out = {}
  if base:sub(1, 1) == "@" then
    local root = chat and chat.working_dir or vim.fn.getcwd()
    local query = base:sub(2):gsub('^"', "")
    local lower = query:lower()
    local prefix, contains = {}, {}
    for _, path in ipairs(M.workspace_paths(root)) do
      local l = path:lower()
      if l == lower then -- luacheck: ignore 542
        -- the folder typed so far is not an item: its entries are
      elseif l:sub(1, #lower) == lower then
        prefix[#prefix + 1] = path
      elseif lower ~= "" and l:find(lower, 1, true) then
        contains[#contains + 1] = path
      end
    end
    for _, list in ipairs({ prefix, contains }) do
      for _, path in ipairs(list) do
        local word = path:find("%s") and ('@"' .. path .. '"') or ("@" .. path)
        out[#out + 1] = {
          word = word,
          abbr = path,
          kind = path:sub(-1) == "/" and "dir" or "file",
          menu = "[sema]",
          dup = 0,
        }
      end
    end
  elseif base:sub(1, 1) == "/" then
    local query = base:sub(2):lower()
    for _, c in ipairs(commands(chat)) do
      if c.name:lower():sub(1, #query) == query then
        out[#out + 1] = {
          word = "/" .. c.name,
          abbr = "/" .. c.name .. (c.argumentHint and (" " .. c.argumentHint) or ""),
          kind = c.source or "builtin",
          menu = c.description,
          info = c.description,
        }
      end
    end
  end
  return out
end

--- 'omnifunc' / 'completefunc'.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line()
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local start = token_start(line, col)
    -- -3: cancel silently, without leaving completion mode
    return start or -3
  end
  return M.items(base, chat_of_buffer())
end

return M
