--- Show a resumed session's earlier conversation, read back with `session/messages`
--- (used only when the server lists that method in `initialize`).
local M = {}

local function text_of(content)
  if type(content) == "string" then
    return content
  end
  local out = {}
  for _, block in ipairs(type(content) == "table" and content or {}) do
    if type(block) == "table" and type(block.text) == "string" then
      out[#out + 1] = block.text
    end
  end
  return table.concat(out, "\n")
end

--- Render one page of messages (at most `limit`), then the next, until done.
function M.show(client, chat, cursor)
  local params = { sessionId = chat.session_id, cursor = cursor, limit = 200 }
  client:request("session/messages", params, function(err, result)
    if err or not result then
      chat:append({ "(could not read the earlier conversation: " .. (err and err.message or "?") .. ")" })
      return
    end
    for _, m in ipairs(result.messages or {}) do
      local role = m.role or m.type
      if role == "user" then
        local text = text_of(m.content or m.input)
        if text ~= "" then
          chat:append({ "", "## You", "" })
          chat:append(vim.split(text, "\n", { plain = true }))
        end
      elseif role == "assistant" then
        local text = text_of(m.content)
        chat:append({ "", "## Sema", "" })
        if text ~= "" then
          chat:append(vim.split(text, "\n", { plain = true }))
        end
        for _, call in ipairs(m.toolCalls or {}) do
          local mark = call.status == "error" and "✗" or "✓"
          chat:append({ "  " .. mark .. " " .. (call.title or call.name or "?") })
        end
      end
    end
    if result.nextCursor then
      M.show(client, chat, result.nextCursor)
    else
      chat:append({ "", "— earlier conversation above —" })
    end
  end)
end

return M
