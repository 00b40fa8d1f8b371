-- Consent through vim.ui.select: a Write approved after looking at its diff, a Write
-- rejected, an Edit rejected with feedback.
local H = dofile(vim.env.SEMA_NVIM_PLUGIN .. "/tests/helpers.lua")

local function diff_view()
  local wins = vim.tbl_filter(function(w)
    return vim.wo[w].diff
  end, vim.api.nvim_tabpage_list_wins(0))
  local proposed
  for _, w in ipairs(wins) do
    local b = vim.api.nvim_win_get_buf(w)
    if vim.api.nvim_buf_get_name(b):find("sema://proposed/", 1, true) then
      proposed = vim.api.nvim_buf_get_lines(b, 0, -1, true)
    end
  end
  return { diff_windows = #wins, proposed = proposed }
end

local step = 0
H.picker(function(_, labels)
  step = step + 1
  if step == 1 then
    return "Show the diff"
  elseif step == 2 then
    H.result.diff = diff_view()
    return "Allow once"
  elseif step == 3 then
    return "Reject"
  elseif step == 4 then
    return "Show the diff"
  elseif step == 5 then
    H.result.edit_diff = diff_view()
    H.input_answer = "keep it tiny"
    return "Reject with feedback…"
  end
  error("unexpected prompt: " .. vim.inspect(labels))
end)

H.run(function()
  vim.cmd("Sema")
  H.wait_event("SemaReady")
  -- notes.txt is open in a buffer (it does not exist yet)
  local notes = vim.fn.bufadd(vim.fn.getcwd() .. "/notes.txt")
  vim.fn.bufload(notes)

  vim.cmd("Sema write the notes")
  H.wait_event("SemaPromptDone", 1)
  H.result.diff.closed_after_answer = #vim.api.nvim_list_tabpages() == 1
  H.result.notes_buffer = vim.api.nvim_buf_get_lines(notes, 0, -1, true)
  H.result.quickfix = vim.tbl_map(function(item)
    return vim.api.nvim_buf_get_name(item.bufnr)
  end, vim.fn.getqflist())

  vim.cmd("Sema write the other file")
  H.wait_event("SemaPromptDone", 2)
  vim.cmd("Sema now edit the readme")
  H.wait_event("SemaPromptDone", 3)
  H.snapshot("end")
end)
