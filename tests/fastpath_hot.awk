# fastpath_hot.awk - from one function's objdump listing, print its hot
# part: from the entry to the first ret, or jump back to an earlier
# address (the shared epilogue), after the last rdtsc before it.  What
# follows is the slow path (the registration of a site, the out-of-line
# emit), which clang lays out after the hot part; gcc moves it to a
# ".cold" symbol instead, so this cut changes nothing there.
function hex(s,    i, n) {
  n = 0
  s = tolower(s)
  for (i = 1; i <= length(s); i++)
    n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return n
}
{ print }
$2 == "rdtsc" { tsc = 1 }
tsc && $2 == "ret" { exit }
tsc && $2 == "jmp" && hex($3) < hex(substr($1, 1, length($1) - 1)) { exit }
