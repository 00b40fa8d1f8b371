--- The chat's tool lines (methods of `sema.Chat`): one line per tool call, its icon and
--- summary updated in place as the call runs, asks, ends or fails; a subagent's calls are
--- indented under their Task. Each line carries an extmark, so text streamed or appended
--- after it never moves it.
local changes = require("sema.changes")
local text = require("sema.text")

local api = vim.api
local M = {}
local Chat = {}
M.methods = Chat

local ns = api.nvim_create_namespace("sema.chat")
local ICON = { running = "⋯", waiting = "?", done = "✓", failed = "✗", interrupted = "■" }

function Chat:_set_line(mark, line)
  local pos = api.nvim_buf_get_extmark_by_id(self.buf, ns, mark, {})
  local row = pos[1]
  if row and row < api.nvim_buf_line_count(self.buf) then
    -- replace the text, not the line, so the line's mark stays on it
    local old = api.nvim_buf_get_lines(self.buf, row, row + 1, true)[1]
    self:_modify(function()
      api.nvim_buf_set_text(self.buf, row, 0, row, #old, { line })
    end)
  end
end

function Chat:_tool_text(tool, status, detail)
  local line = tool.indent .. ICON[status] .. " " .. text.one_line(tool.title, 200)
  if detail and detail ~= "" then
    line = line .. " — " .. text.one_line(detail, 200)
  end
  return line
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
    changes.touched(self, path, p.summary ~= "" and p.summary or p.toolName)
  elseif p.toolName == "Bash" then
    self.ran_command = true
  end
end

function Chat:task_end(p)
  local task = self.tasks[p.taskId]
  if task then
    local status = p.status == "completed" and "done" or (p.status == "interrupted" and "interrupted" or "failed")
    self:_set_line(task.tool.mark, self:_tool_text(task.tool, status, p.status ~= "completed" and p.content or nil))
  end
end

return M
