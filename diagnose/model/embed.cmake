# cmake -DIN=weights.tsv -DOUT=model_table.cpp -P embed.cmake: the fitted table as a C++ string,
# so an installed binary needs no data file. Cut into pieces: a string literal over 64 KiB is
# beyond what compilers must accept.
file(READ "${IN}" text)
string(LENGTH "${text}" n)
set(out "// Generated from diagnose/model/weights.tsv by diagnose/model/embed.cmake; do not edit.\n")
string(APPEND out "namespace sl::diagnose {\nextern const char kEmbeddedModel[];\nconst char kEmbeddedModel[] =\n")
set(at 0)
while(at LESS n)
  string(SUBSTRING "${text}" ${at} 16000 piece)
  string(APPEND out "R\"slmodel(${piece})slmodel\"\n")
  math(EXPR at "${at} + 16000")
endwhile()
string(APPEND out "\"\";\n}  // namespace sl::diagnose\n")
file(WRITE "${OUT}.tmp" "${out}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
