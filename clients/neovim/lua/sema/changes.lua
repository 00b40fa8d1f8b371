--- The files a turn changed: the agent's writes are collected as the turn runs; when it
--- ends they go to the quickfix list (`config.quickfix`) with a line in the chat, and the
--- open buffers of changed files are reloaded (`config.reload_changed`).
local config = require("sema.config")

local api = vim.api
local M = {}

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

--- The agent wrote `path` (relative to the chat's folder, or absolute); `text` says how.
---@param chat sema.Chat
function M.touched(chat, path, text)
  if not path:match("^/") then
    path = chat.working_dir .. "/" .. path
  end
  path = vim.fs.normalize(path)
  if not chat.touched[path] then
    chat.touched_order[#chat.touched_order + 1] = path
  end
  chat.touched[path] = text
  if config.options.reload_changed then
    M.reload(path)
  end
end

--- A turn starts: nothing changed yet.
---@param chat sema.Chat
function M.turn_start(chat)
  chat.touched = {}
  chat.touched_order = {}
  chat.ran_command = false
end

--- A turn ended: its files in the quickfix list and a line in the chat; after a command,
--- every unmodified buffer whose file changed is reloaded.
---@param chat sema.Chat
function M.turn_end(chat)
  local order = chat.touched_order
  if #order > 0 then
    if config.options.quickfix then
      local items = {}
      for _, path in ipairs(order) do
        items[#items + 1] = { filename = path, lnum = 1, text = chat.touched[path] }
      end
      vim.fn.setqflist({}, " ", { title = "Sema: files changed by the turn", items = items })
    end
    chat:append({
      "",
      ("Changed %d file%s%s"):format(#order, #order == 1 and "" or "s", config.options.quickfix and " (:copen)" or ""),
    })
  end
  if chat.ran_command and config.options.reload_changed then
    -- a command may have changed any file
    M.reload_changed()
  end
end

return M
