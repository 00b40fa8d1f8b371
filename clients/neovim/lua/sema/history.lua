--- A session's conversation as the server keeps it, read back with `session/messages`
--- (used only when the server lists that method in `initialize`): a resumed session shows
--- its earlier conversation, a rewound or forked one shows what is left of it.
local M = {}

--- The text of a message's content blocks; images become a `[image …]` line.
local function text_of(content)
  local out = {}
  for _, block in ipairs(type(content) == "table" and content or {}) do
    if block.type == "text" and type(block.text) == "string" then
      out[#out + 1] = block.text
    elseif block.type == "image" then
      out[#out + 1] = "[image" .. (block.path and (" " .. block.path) or (" " .. (block.mediaType or ""))) .. "]"
    end
  end
  return table.concat(out, "\n")
end
M.text_of = text_of

local function lines(text)
  return vim.split(text, "\n", { plain = true })
end

--- Render one message into the chat; a user's prompt is remembered (rewind and fork pick
--- from them). `state.last_role` joins consecutive assistant messages (a tool call, then
--- the answer) under one heading, as a live turn shows them.
local function render(chat, m, state)
  local text = text_of(m.content)
  local after_assistant = state.last_role == "assistant"
  state.last_role = m.role
  if m.kind == "summary" then
    chat:append({ "", "— summary of the earlier conversation —" })
    chat:append(lines(text))
  elseif m.kind == "notice" then
    if text ~= "" then
      chat:append({ "", "— " .. text:gsub("\n", " ") .. " —" })
    end
  elseif m.role == "user" then
    if m.kind == "prompt" then
      chat:remember_prompt(m.id, text)
    end
    if text ~= "" then
      chat:append(vim.list_extend({ "", "## You", "" }, lines(text)))
    end
  elseif m.role == "assistant" then
    local out = after_assistant and { "" } or { "", "## Sema", "" }
    if m.thinking and m.thinking ~= "" and require("sema.config").options.show_thinking then
      chat:append(out)
      chat:append_thinking(m.thinking)
      out = {}
    end
    if text ~= "" then
      vim.list_extend(out, lines(text))
    end
    if #out > 0 then
      chat:append(out)
    end
    for _, call in ipairs(m.toolCalls or {}) do
      local mark = ({ completed = "✓", interrupted = "■", running = "⋯" })[call.status] or "✗"
      chat:append({ "  " .. mark .. " " .. (call.title or call.name or "?") })
    end
  end
end

--- Show the conversation (all pages), then call `done()`.
---@param client sema.RpcClient
---@param chat sema.Chat
---@param done fun()?
function M.show(client, chat, done, cursor, state)
  state = state or {}
  local params = { sessionId = chat.session_id, limit = 500, cursor = cursor }
  client:request("session/messages", params, function(err, result)
    if err or not result then
      chat:append({ "(could not read the earlier conversation: " .. (err and err.message or "?") .. ")" })
      return done and done()
    end
    for _, m in ipairs(result.messages or {}) do
      render(chat, m, state)
    end
    if result.nextCursor then
      return M.show(client, chat, done, result.nextCursor, state)
    end
    chat:append({ "", "— earlier conversation above —" })
    if done then
      done()
    end
  end)
end

return M
