# bench-lib.sh: helpers shared by the load scripts (sourced, not run).

# cputicks PID: CPU clock ticks (user + system) used so far by PID and its
# children (nginx's workers).
cputicks() {
	local t=0 p
	for p in "$1" $(pgrep -P "$1"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# median: the median of the numbers on standard input, one a line.
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
