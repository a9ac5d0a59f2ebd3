# Ports for the benchmarks (sourced): BENCH_NAME names the script in
# messages. Every server they start listens on 127.0.0.1.

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() { # PORT: until something listens, at most 10 s
	local i
	for i in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "${BENCH_NAME:-bench}: nothing listens on 127.0.0.1:$1" >&2
	return 1
}
