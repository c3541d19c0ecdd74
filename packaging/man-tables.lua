-- man has no room for the manual's wide tables (groff: "table wider than line width", "can't
-- break line" on every `man safe-launch`): each row becomes an entry of a definition list, its
-- first cell the term and the other cells, named by their column heading, the definition.
local function heading_names(tbl)
  local names = {}
  for _, row in ipairs(tbl.head.rows) do
    for i, cell in ipairs(row.cells) do
      names[i] = pandoc.utils.stringify(cell.contents)
    end
  end
  return names
end

function Table(tbl)
  local names = heading_names(tbl)
  local items = {}
  for _, body in ipairs(tbl.bodies) do
    for _, row in ipairs(body.body) do
      local term = pandoc.utils.blocks_to_inlines(row.cells[1].contents)
      local definition = {}
      for i = 2, #row.cells do
        local blocks = row.cells[i].contents
        if #row.cells > 2 and names[i] and names[i] ~= "" and #blocks > 0 then
          local inlines = pandoc.utils.blocks_to_inlines(blocks)
          table.insert(inlines, 1, pandoc.Space())
          table.insert(inlines, 1, pandoc.Emph({pandoc.Str(names[i] .. ":")}))
          blocks = {pandoc.Para(inlines)}
        end
        for _, b in ipairs(blocks) do table.insert(definition, b) end
      end
      table.insert(items, {term, {definition}})
    end
  end
  return pandoc.DefinitionList(items)
end
