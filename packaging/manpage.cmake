# safe-launch(1) from doc/manual.md with pandoc, at build time (packaging/CMakeLists.txt).
# cmake -DPANDOC=... -DMANUAL=doc/manual.md -DHEAD=packaging/man-head.md
#       -DFILTER=packaging/man-tables.lua -DVERSION=x -DOUT=dir -DWORK=scratch-dir -P manpage.cmake
# The manual's "# safe-launch manual" becomes the title and its "##" sections the man page's
# sections, its tables definition lists (man-tables.lua: groff cannot fit them in 80 columns),
# left-aligned and unhyphenated (long paths and flags); man-head.md adds the NAME and SYNOPSIS
# sections man(1) and whatis expect.
execute_process(
  COMMAND ${PANDOC} ${MANUAL} --from markdown --to markdown --shift-heading-level-by=-1
          --output ${WORK}/manual-shifted.md
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pandoc failed on ${MANUAL}")
endif()
execute_process(
  COMMAND ${PANDOC} ${HEAD} ${WORK}/manual-shifted.md --from markdown --to man --standalone
          --lua-filter ${FILTER} --variable adjusting=l --variable hyphenate=false
          --metadata title=SAFE-LAUNCH --metadata section=1
          --metadata "header=safe-launch manual" --metadata "footer=safe-launch ${VERSION}"
          --output ${OUT}/safe-launch.1
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pandoc could not write ${OUT}/safe-launch.1")
endif()
# -n: no name or time stamp in the gzip header, so the package is reproducible (lintian).
execute_process(COMMAND gzip -9nf ${OUT}/safe-launch.1 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed on ${OUT}/safe-launch.1")
endif()
