-- `@` and `/` completion in the input, as typed (the omnifunc opens on the trigger).
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

local captured
-- <F2> in insert mode records the completion menu as it is at that moment
vim.keymap.set("i", "<F2>", function()
  captured = vim.fn.complete_info({ "items" }).items
  return ""
end, { expr = true })

local function words()
  return vim.tbl_map(function(item)
    return item.word
  end, captured or {})
end

local function fresh_input()
  local chat = H.chat()
  vim.api.nvim_set_current_win(chat.input_win)
  vim.cmd("stopinsert")
  local n = vim.api.nvim_buf_line_count(chat.input)
  vim.api.nvim_buf_set_lines(chat.input, n - 1, n, true, { "> " })
  captured = nil
end

H.run(function()
  vim.cmd("Sema")
  H.wait_event("SemaReady")

  fresh_input()
  -- "@" opens the menu at once; <C-e> closes it, and <C-x><C-o> asks again for "@src/"
  H.type("A@<C-e>src/<C-x><C-o><F2>mod3<C-y><Esc>")
  H.result.at_src = words()
  H.result.input_line = vim.api.nvim_get_current_line()

  fresh_input()
  H.type("A@<F2><C-e><Esc>")
  H.result.at_all = words()

  fresh_input()
  H.type("A/<C-e>re<C-x><C-o><F2><C-e><Esc>")
  H.result.slash = words()
  H.result.slash_menu = {}
  for _, item in ipairs(captured or {}) do
    H.result.slash_menu[item.word] = item.menu
  end

  fresh_input()
  H.type("A/<F2><C-e><Esc>")
  H.result.slash_all = words()
end)
