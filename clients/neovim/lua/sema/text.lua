--- Small text helpers the chat's modules share.
local M = {}

function M.split_lines(text)
  return vim.split(text, "\n", { plain = true })
end

--- `text` on one line (newlines and the blanks around them become one space), cut at `max`.
function M.one_line(text, max)
  text = (text or ""):gsub("%s*\n%s*", " ")
  if max and #text > max then
    text = text:sub(1, max) .. "…"
  end
  return text
end

--- A token count as the winbar shows it: `950`, `12.3k`.
function M.human_tokens(n)
  n = n or 0
  if n >= 1000 then
    return ("%.1fk"):format(n / 1000)
  end
  return tostring(n)
end

return M
