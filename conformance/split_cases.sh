#!/usr/bin/env sh
# split_cases.sh BINARY FILTER... — a test binary split into several ctest cases (plumb_test's
# CASES: each case runs the tests whose names contain one of its PLUMB_TEST substrings) must run
# every test it has, and no case may select nothing. Lists the binary's tests (PLUMB_TEST_LIST=1)
# and checks both, and that no test is in two cases (it would run twice); each FILTER is one
# case's comma-separated PLUMB_TEST value (a substring, or ^prefix).
bin=$1
shift
names=$(PLUMB_TEST_LIST=1 "$bin") || { echo "FAIL: $bin did not list its tests"; exit 1; }
[ -n "$names" ] || { echo "FAIL: $bin listed no tests"; exit 1; }
fail=0
matches() { # NAME FILTER: NAME contains one of FILTER's comma-separated substrings
  old_ifs=$IFS
  IFS=,
  for sub in $2; do
    case $sub in
      ^*) case $1 in "${sub#^}"*) IFS=$old_ifs; return 0 ;; esac ;;
      *) case $1 in *"$sub"*) IFS=$old_ifs; return 0 ;; esac ;;
    esac
  done
  IFS=$old_ifs
  return 1
}
for name in $names; do
  found=0
  for f in "$@"; do matches "$name" "$f" && found=$((found + 1)); done
  [ $found -gt 0 ] || { echo "FAIL: test $name is in no ctest case of $(basename "$bin") (add it to CASES)"; fail=1; }
  [ $found -lt 2 ] || { echo "FAIL: test $name is in $found ctest cases of $(basename "$bin") (it runs $found times)"; fail=1; }
done
for f in "$@"; do
  hit=0
  for name in $names; do matches "$name" "$f" && hit=1 && break; done
  [ $hit = 1 ] || { echo "FAIL: the case PLUMB_TEST=$f selects no test of $(basename "$bin")"; fail=1; }
done
[ $fail = 0 ] && echo "every test of $(basename "$bin") is in one of its $# ctest cases"
exit $fail
