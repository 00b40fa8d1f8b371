--- The plugin's pickers: one `vim.ui.select` flow (so Telescope, fzf-lua, dressing or snacks
--- users get their own picker), called back only when something is picked. Consent prompts
--- have their own guarded flow in `sema.consent` (a choice made after the server stopped
--- waiting is ignored there).
local M = {}

--- How an item reads in the list without a `format`: its `text`, else the item itself.
local function default_format(item)
  return type(item) == "table" and item.text or tostring(item)
end

--- Offer `items`; `on_pick(item)` runs only when one is picked (never on cancel).
---@param items any[]
---@param opts {prompt: string, kind: string, format: (fun(item: any): string)?}
---@param on_pick fun(item: any)
function M.select(items, opts, on_pick)
  vim.ui.select(items, {
    prompt = opts.prompt,
    kind = opts.kind,
    format_item = opts.format or default_format,
  }, function(item)
    if item then
      on_pick(item)
    end
  end)
end

--- A setting given as a command argument, or else picked: `choices` are `{mode, text}`
--- entries; `apply(mode)` runs with the given or the picked `mode`.
---@param mode string?
---@param choices {mode: string, text: string}[]
---@param opts {prompt: string, kind: string}
---@param apply fun(mode: string)
function M.mode(mode, choices, opts, apply)
  if mode then
    return apply(mode)
  end
  M.select(choices, opts, function(choice)
    apply(choice.mode)
  end)
end

return M
