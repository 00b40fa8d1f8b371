--- Server→client requests: tool consent, AskUserQuestion and ExitPlanMode, through
--- `vim.ui.select` / `vim.ui.input` (so Telescope, fzf-lua, dressing or snacks users get
--- their own picker). Answers are asynchronous: nothing here blocks the editor. One
--- prompt is open at a time; the others wait in order. When the server stops waiting
--- (`$/cancelRequest`, e.g. after an interrupt), the open prompt is closed.
local api = vim.api
local M = {}

local queue = {} -- jobs waiting for their turn
--- The open prompt. A request is known by its connection and id together: each server
--- numbers its own requests, so two servers (the editor's own and an attached one, or two
--- attached ones) can each have a request `sema-r1` open; `session` is the session it is for.
---@type {id: any, client: sema.RpcClient, session: string?, wins: table<integer, boolean>,
---  tab: integer?, plan_win: integer?, closed: boolean}?
local current = nil

local function notify(msg, level)
  vim.notify("Sema: " .. msg, level or vim.log.levels.INFO)
end

local function win_set()
  local set = {}
  for _, w in ipairs(api.nvim_list_wins()) do
    set[w] = true
  end
  return set
end

local function close_tab(tab)
  if tab and api.nvim_tabpage_is_valid(tab) and #api.nvim_list_tabpages() > 1 then
    local nr = api.nvim_tabpage_get_number(tab)
    pcall(vim.cmd, "tabclose " .. nr)
  end
end

local function finish()
  if current then
    close_tab(current.tab)
    if current.plan_win and api.nvim_win_is_valid(current.plan_win) then
      pcall(api.nvim_win_close, current.plan_win, true)
    end
  end
  current = nil
  local job = table.remove(queue, 1)
  if job then
    vim.schedule(job)
  end
end

local function label_of(item)
  return item.label
end

--- `callback` guarded: it runs only while request `id`'s prompt is open and the server waits.
local function while_waiting(client, id, callback)
  return function(value)
    if current and current.id == id and current.client == client and not current.closed and client:waiting(id) then
      callback(value)
    end
  end
end

--- `vim.ui.select` that ignores a choice made after the server stopped waiting. Items are
--- `{label = …}` tables unless `opts.format_item` says otherwise.
local function select(client, id, items, opts, on_choice)
  if not client:waiting(id) then
    return finish()
  end
  if current then
    current.wins = win_set()
  end
  opts.format_item = opts.format_item or label_of
  vim.ui.select(items, opts, while_waiting(client, id, on_choice))
end

local function input(client, id, opts, on_input)
  vim.ui.input(opts, while_waiting(client, id, on_input))
end

local function answer(client, id, result, err)
  client:respond(id, result, err)
  finish()
end

-- ------------------------------------------------------------------- diff of a Write/Edit

local function split_content(text)
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

--- The file's content after the proposed Write or Edit, or nil when it cannot be computed.
local function proposed_lines(p, path)
  local input_ = p.input or {}
  if p.toolName == "Write" and type(input_.content) == "string" then
    return split_content(input_.content)
  end
  if p.toolName == "Edit" and type(input_.old_string) == "string" and vim.uv.fs_stat(path) then
    local text = table.concat(vim.fn.readfile(path, "b"), "\n")
    local s, e = text:find(input_.old_string, 1, true)
    if not s then
      return nil
    end
    local new = input_.new_string or ""
    if input_.replace_all then
      local out, pos = {}, 1
      while s do
        out[#out + 1] = text:sub(pos, s - 1) .. new
        pos = e + 1
        s, e = text:find(input_.old_string, pos, true)
      end
      out[#out + 1] = text:sub(pos)
      text = table.concat(out)
    else
      text = text:sub(1, s - 1) .. new .. text:sub(e + 1)
    end
    return split_content(text)
  end
  return nil
end

--- Open a tab with the current file and the proposed content side by side (`:diffthis`),
--- or the unified diff the server sent when the result cannot be computed here.
function M.show_diff(chat, p)
  local rel = (p.input or {}).file_path or "?"
  local path = rel
  if not path:match("^/") then
    path = (chat and chat.working_dir or vim.fn.getcwd()) .. "/" .. path
  end
  local new_lines = proposed_lines(p, path)
  vim.cmd("tabnew")
  local tab = api.nvim_get_current_tabpage()
  if not new_lines then
    local b = api.nvim_get_current_buf()
    api.nvim_buf_set_lines(b, 0, -1, true, vim.split(p.content or "", "\n", { plain = true }))
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "wipe"
    vim.bo[b].filetype = "diff"
    vim.bo[b].modifiable = false
    return tab
  end
  local scratch = api.nvim_get_current_buf()
  if vim.uv.fs_stat(path) then
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    if api.nvim_buf_is_valid(scratch) and scratch ~= api.nvim_get_current_buf() then
      pcall(api.nvim_buf_delete, scratch, { force = true })
    end
  else
    vim.bo[scratch].buftype = "nofile"
    vim.bo[scratch].bufhidden = "wipe"
    pcall(api.nvim_buf_set_name, scratch, "sema://current/" .. rel .. " (new file)")
  end
  local ft = vim.bo.filetype
  vim.cmd("diffthis")
  vim.cmd("rightbelow vnew")
  local b = api.nvim_get_current_buf()
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "wipe"
  pcall(api.nvim_buf_set_name, b, "sema://proposed/" .. rel)
  api.nvim_buf_set_lines(b, 0, -1, true, new_lines)
  vim.bo[b].modifiable = false
  if ft ~= "" then
    vim.bo[b].filetype = ft
  end
  vim.cmd("diffthis")
  return tab
end

-- ------------------------------------------------------------------- the three requests

local function permission(client, chat, p, id)
  if chat then
    chat:tool_status(p.toolCallId, "waiting", "waiting for your answer")
  end
  local items = {}
  local options = p.options or {}
  if vim.tbl_contains(options, "allow_once") then
    items[#items + 1] = { label = "Allow once", decision = "allow_once" }
  end
  if vim.tbl_contains(options, "allow_always") then
    items[#items + 1] =
      { label = "Allow always (rule: " .. (p.alwaysRule or p.toolName) .. ")", decision = "allow_always" }
  end
  if p.contentKind == "diff" or p.toolName == "Write" or p.toolName == "Edit" then
    items[#items + 1] = { label = "Show the diff", diff = true }
  end
  if vim.tbl_contains(options, "reject") then
    items[#items + 1] = { label = "Reject", decision = "reject" }
    items[#items + 1] = { label = "Reject with feedback…", decision = "reject", feedback = true }
  end
  local detail = p.contentKind == "text" and p.content ~= "" and p.content ~= p.title and (": " .. p.content) or ""
  local prompt = "Sema: " .. p.title .. detail:gsub("\n.*", " …")

  local function done(result)
    local tool = chat and chat.tools[p.toolCallId]
    if tool and result.decision == "reject" then
      tool.verdict = result.feedback and ("rejected: " .. result.feedback) or "rejected"
    end
    if chat then
      chat:tool_status(p.toolCallId, "running", tool and tool.verdict)
    end
    answer(client, id, result)
  end

  local function ask()
    select(client, id, items, {
      prompt = prompt,
      kind = "sema.permission",
    }, function(item)
      if not item then
        -- dismissed: the same as Reject
        return done({ decision = "reject" })
      end
      if item.diff then
        close_tab(current.tab)
        current.tab = M.show_diff(chat, p)
        return ask()
      end
      if item.feedback then
        return input(client, id, { prompt = "Feedback for the agent: " }, function(text)
          if text == nil or vim.trim(text) == "" then
            return ask()
          end
          done({ decision = "reject", feedback = text })
        end)
      end
      done({ decision = item.decision })
    end)
  end
  ask()
end

local function questions(client, chat, p, id)
  local answers = {}
  local qs = p.questions or {}
  local ask

  local function dismissed()
    answer(client, id, nil, { code = -32000, message = "the user dismissed the question" })
  end

  local function other(i, q)
    input(client, id, { prompt = q.question .. " " }, function(text)
      if text == nil then
        return ask(i)
      end
      answers[q.question] = text
      ask(i + 1)
    end)
  end

  --- What both question pickers do with a dismissal or "Other…"; true when `item` was one.
  local function dismissed_or_other(i, q, item)
    if not item then
      dismissed()
    elseif item.other then
      other(i, q)
    else
      return false
    end
    return true
  end

  local function multi(i, q, chosen)
    local items = {}
    for _, o in ipairs(q.options or {}) do
      items[#items + 1] = { label = o.label, description = o.description, option = true }
    end
    items[#items + 1] = { label = "Done", done = true }
    items[#items + 1] = { label = "Other…", other = true }
    select(client, id, items, {
      prompt = (q.header or "Question") .. ": " .. q.question .. " (pick several, then Done)",
      kind = "sema.question",
      format_item = function(item)
        if item.option then
          local box = chosen[item.label] and "[x] " or "[ ] "
          return box .. item.label .. ((item.description or "") ~= "" and (" — " .. item.description) or "")
        end
        return item.label
      end,
    }, function(item)
      if dismissed_or_other(i, q, item) then
        return
      end
      if item.done then
        local labels = {}
        for _, o in ipairs(q.options or {}) do
          if chosen[o.label] then
            labels[#labels + 1] = o.label
          end
        end
        answers[q.question] = table.concat(labels, ", ")
        return ask(i + 1)
      end
      chosen[item.label] = not chosen[item.label] or nil
      multi(i, q, chosen)
    end)
  end

  ask = function(i)
    if i > #qs then
      return answer(client, id, { answers = answers })
    end
    local q = qs[i]
    if q.multiSelect then
      return multi(i, q, {})
    end
    local items = {}
    for _, o in ipairs(q.options or {}) do
      items[#items + 1] = { label = o.label, description = o.description or "" }
    end
    items[#items + 1] = { label = "Other…", other = true }
    select(client, id, items, {
      prompt = (q.header or "Question") .. ": " .. q.question,
      kind = "sema.question",
      format_item = function(item)
        return item.label .. ((item.description or "") ~= "" and (" — " .. item.description) or "")
      end,
    }, function(item)
      if dismissed_or_other(i, q, item) then
        return
      end
      answers[q.question] = item.label
      ask(i + 1)
    end)
  end
  if chat then
    chat:append({ "  ? " .. (#qs == 1 and qs[1].question or (#qs .. " questions")) })
  end
  ask(1)
end

local PLAN_ITEMS = {
  { label = "Start editing (Agent mode, keep the conversation)", decision = "startEditing" },
  { label = "Clear the context and start from the plan", decision = "clearContextAndStart" },
  { label = "Keep planning (tell the agent what to change)…", decision = "keepPlanning" },
}

local function plan_exit(client, chat, p, id)
  if p.planFilePath and vim.uv.fs_stat(p.planFilePath) then
    vim.cmd("botright split " .. vim.fn.fnameescape(p.planFilePath))
    vim.bo.readonly = true
    current.plan_win = api.nvim_get_current_win()
  end
  if chat then
    chat:append({ "  ▸ Plan ready: " .. (p.planFilePath or "") })
  end
  local items = vim.tbl_filter(function(item)
    return p.options == nil or vim.tbl_contains(p.options, item.decision)
  end, PLAN_ITEMS)
  select(client, id, items, {
    prompt = "Sema: the plan is ready",
    kind = "sema.plan",
  }, function(item)
    if not item then
      return answer(client, id, { decision = "keepPlanning" })
    end
    if item.decision == "keepPlanning" then
      return input(client, id, { prompt = "What should change in the plan? " }, function(text)
        local result = { decision = "keepPlanning" }
        if text and vim.trim(text) ~= "" then
          result.feedback = text
        end
        answer(client, id, result)
      end)
    end
    answer(client, id, { decision = item.decision })
  end)
end

local HANDLERS = {
  ["tool:permission:request"] = permission,
  ["ask:question:request"] = questions,
  ["plan:exit:request"] = plan_exit,
}

--- A server→client request arrived: open its prompt now, or when the open one is done.
function M.handle(client, chat, method, params, id)
  local handler = HANDLERS[method]
  if not handler then
    client:respond(id, nil, { code = -32601, message = "unknown request: " .. method })
    return
  end
  local function job()
    if not client:waiting(id) then
      return finish()
    end
    current = { id = id, client = client, session = params.sessionId, wins = win_set(), closed = false }
    handler(client, chat, params, id)
  end
  if current then
    table.insert(queue, job)
  else
    job()
  end
end

--- The server of `client` no longer waits for its request `id` (an interrupt, or another
--- client answered), for session `session_id`: close its prompt. The same id of another
--- connection, or of another session, leaves the open prompt alone.
---@param client sema.RpcClient
---@param session_id string?
function M.cancelled(id, client, session_id)
  if not current or current.id ~= id or current.client ~= client
    or (session_id ~= nil and current.session ~= nil and current.session ~= session_id) then
    return -- a queued job sees `waiting(id)` false and skips itself
  end
  current.closed = true
  -- close the picker's floating windows, opened after the prompt began
  for _, w in ipairs(api.nvim_list_wins()) do
    if not current.wins[w] and api.nvim_win_is_valid(w) and api.nvim_win_get_config(w).relative ~= "" then
      pcall(api.nvim_win_close, w, true)
    end
  end
  if vim.fn.mode() == "i" and vim.bo.buftype == "prompt" and vim.b.sema_session == nil then
    vim.cmd("stopinsert")
  end
  notify("the agent stopped waiting for an answer")
  finish()
end

--- Is a consent prompt open? (for statuslines)
function M.is_open()
  return current ~= nil
end

return M
