--- The chat's input (methods of `sema.Chat`): a prompt buffer whose line is sent on <CR>
--- (or steers the running turn), with the project's earlier inputs to recall, `@`/`/`
--- completion, and the chat's keymaps (`config.keymaps`).
local config = require("sema.config")

local api = vim.api
local M = {}
local Chat = {}
M.methods = Chat

--- Create the chat's prompt buffer (`chat.input`) and the keymaps of both its buffers.
---@param chat sema.Chat
function M.create(chat)
  local input = api.nvim_create_buf(false, true)
  chat.input = input
  api.nvim_buf_set_name(input, "sema://input/" .. chat.session_id)
  vim.bo[input].buftype = "prompt"
  vim.bo[input].filetype = "sema_input"
  vim.b[input].sema_session = chat.session_id
  vim.fn.prompt_setprompt(input, "> ")
  vim.fn.prompt_setcallback(input, function(text)
    chat:_on_submit(text, "followUp")
  end)
  vim.fn.prompt_setinterrupt(input, function()
    chat.handlers.interrupt(chat)
  end)
  local omni = "v:lua.require'sema.complete'.omnifunc"
  vim.bo[input].omnifunc = omni
  vim.bo[input].completefunc = omni
  -- narrow the menu as the user types, insert only on <C-y> (buffer-local since 0.11)
  pcall(api.nvim_set_option_value, "completeopt", "menuone,noinsert", { scope = "local", buf = input })
  chat:_keymaps()
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

return M
