package llama

// The shell programs the actuator runs on a node. Each is a constant run
// as `sh -c PROGRAM sh ARG...`: input reaches it only as positional
// parameters (quoted one by one by sshx.Quote on the way), never as part
// of the program text.

// shLives defines lives PID, the one test of whether a process runs: it
// exists (kill -0) and is no zombie, a process that has exited and that
// only its parent has not reaped yet (on a node whose init does not reap,
// a killed lane stays one). Every program that asks prepends it.
const shLives = `lives() {
  kill -0 "$1" 2>/dev/null || return 1
  case $(ps -o stat= -p "$1" 2>/dev/null) in *Z*) return 1 ;; esac
}
`

// scriptStartBody starts a lane unless its pidfile names a live process,
// after shLives and a service manager's launch and teardown
// (serviceManager). $1 is the state directory, $2 the lane's key, $3 its
// unit ("" for none), the rest the server's argv when there is no unit;
// stdin is the lane's metadata (one JSON line), then the unit file. It
// prints "running PID", "started PID" or "exited" (the unit has no main
// process: it exited at once). A lock directory serialises two starts of
// one lane, so a node never runs two processes of it; a lock whose holder
// died (a start cut off with its session) is broken.
const scriptStartBody = `set -eu
dir=$1 name=$2 unit=$3
shift 3
mkdir -p "$dir"
lock="$dir/$name.lock"
n=0
until mkdir "$lock" 2>/dev/null; do
  holder=$(cat "$lock/pid" 2>/dev/null || true)
  case $holder in
    ''|*[!0-9]*) ;;
    *) if ! lives "$holder"; then rm -rf "$lock"; continue; fi ;;
  esac
  n=$((n+1))
  if [ "$n" -ge 50 ]; then echo "lane $name: another start (pid $holder) holds $lock" >&2; exit 75; fi
  sleep 0.1
done
echo $$ > "$lock/pid"
trap 'rm -rf "$lock"' EXIT
pidf="$dir/$name.pid"
if [ -s "$pidf" ]; then
  pid=$(cat "$pidf")
  case $pid in *[!0-9]*) ;; *) if lives "$pid"; then echo "running $pid"; exit 0; fi ;; esac
fi
IFS= read -r meta
printf '%s\n' "$meta" > "$dir/$name.json.tmp"
mv -f "$dir/$name.json.tmp" "$dir/$name.json"
log="$dir/$name.log"
: > "$log"
pid=$(launch "$@")
case $pid in ''|0|*[!0-9]*) echo exited; exit 0 ;; esac
echo "$pid" > "$pidf.tmp"
mv -f "$pidf.tmp" "$pidf"
echo "started $pid"
`

// scriptStatus lists the lanes of state directory $1, one line each:
// "lane NAME PID ALIVE RSS META ARGV" separated by tabs, ALIVE 1 or 0,
// RSS the live process's resident memory in KiB, META the metadata JSON
// line, ARGV the live process's own command line: "hex:" and the bytes
// of /proc/PID/cmdline in hex (its words NUL-terminated) where there is
// one, else (macOS) "ps:" and what ps prints, the words joined by spaces.
const scriptStatus = shLives + `dir=$1
for f in "$dir"/*.pid; do
  [ -e "$f" ] || continue
  name=${f##*/}; name=${name%.pid}
  pid=$(head -n 1 "$f" 2>/dev/null || true)
  alive=0 argv= rss=0
  case $pid in
    ''|*[!0-9]*) pid=0 ;;
    *) if lives "$pid"; then
         alive=1
         if [ -r "/proc/$pid/cmdline" ]; then
           argv=hex:$(od -An -v -tx1 "/proc/$pid/cmdline" | tr -d ' \n')
         else
           argv=ps:$(ps -ww -o args= -p "$pid" 2>/dev/null | head -n 1)
         fi
         rss=$(ps -o rss= -p "$pid" 2>/dev/null | tr -d ' ')
       fi ;;
  esac
  meta=$(head -n 1 "$dir/$name.json" 2>/dev/null || true)
  printf 'lane\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$pid" "$alive" "${rss:-0}" "$meta" "$argv"
done
if [ -r /proc/meminfo ]; then
  awk '/^MemTotal:|^MemAvailable:/ {printf "mem\t%s\t%s\n", $1, $2}' /proc/meminfo
fi
`

// scriptForgetBody tears down unit $3 (a service manager's teardown) and
// removes lane $2's pidfile and metadata from state directory $1.
const scriptForgetBody = `teardown "$3"
rm -f "$1/$2.pid" "$1/$2.json"
`

// scriptForgetGoneBody forgets lane $2 of state directory $1, as
// scriptForgetBody does with unit $3, if its pidfile names no live
// process, holding the lane's start lock meanwhile (a start that holds
// it is writing a pidfile: it is left alone). It prints "forgot PID"
// when it did.
const scriptForgetGoneBody = `lock="$1/$2.lock"
mkdir "$lock" 2>/dev/null || exit 0
trap 'rm -rf "$lock"' EXIT
pid=$(head -n 1 "$1/$2.pid" 2>/dev/null || true)
case $pid in ''|*[!0-9]*) ;; *) if lives "$pid"; then exit 0; fi ;; esac
teardown "$3"
rm -f "$1/$2.pid" "$1/$2.json"
echo "forgot $pid"
`

// scriptSignal sends signal $1 to process $2; scriptAlive prints "alive"
// or "gone" for process $1 (a zombie, exited but not reaped, is gone).
const (
	scriptSignal = `kill -s "$1" "$2" 2>/dev/null || true`
	scriptAlive  = shLives + `if lives "$1"; then echo alive; else echo gone; fi`
)

// scriptLogTail prints the end of lane $2's log in state directory $1.
const scriptLogTail = `tail -c 4000 "$1/$2.log" 2>/dev/null || true`

// scriptProbe describes model path $1 and its partial download $2:
// "have SIZE", "cache HEX SIZE" (the digest recorded at the last
// prefetch), "part SIZE" (-1 when absent) and "free KB" of the directory,
// which it creates.
const scriptProbe = `set -u
dir=$(dirname "$1")
mkdir -p "$dir" || exit 1
size() { if [ -f "$1" ]; then wc -c < "$1" | tr -d ' '; else echo -1; fi; }
printf 'have\t%s\n' "$(size "$1")"
printf 'cache\t%s\n' "$(head -n 1 "$1.sha256" 2>/dev/null || true)"
printf 'part\t%s\n' "$(size "$2")"
printf 'free\t%s\n' "$(df -Pk "$dir" | awk 'NR==2 {print $4}')"
`

// scriptSHA256 prints the sha256 of file $1 as the first word.
const scriptSHA256 = `if command -v sha256sum >/dev/null 2>&1; then sha256sum < "$1"; else shasum -a 256 < "$1"; fi`

// scriptRemove removes file $1.
const scriptRemove = `rm -f "$1"`

// scriptCommit renames the verified download $1 to the model path $2 and
// records its digest $3 and size $4 beside it.
const scriptCommit = `set -e
mv -f "$1" "$2"
printf '%s %s\n' "$3" "$4" > "$2.sha256.tmp"
mv -f "$2.sha256.tmp" "$2.sha256"
`

// scriptDownload fetches URL $2 into file $1, resuming what is there.
// curl's globbing is off (--globoff): brackets and braces in a URL are
// the URL's own characters, one request, never a series.
const scriptDownload = `if command -v curl >/dev/null 2>&1; then
  exec curl -fsSL --globoff --retry 3 -C - -o "$1" "$2"
fi
exec wget -q -c -O "$1" "$2"
`

// scriptRecordPartial records partial download $2 in ledger $1 (once), so
// that a later prefetch can remove it when its model has gone elsewhere.
const scriptRecordPartial = `mkdir -p "$(dirname "$1")"
grep -qxF -- "$2" "$1" 2>/dev/null || printf '%s\n' "$2" >> "$1"
`

// scriptSweepPartials removes the partial downloads that ledger $1 records
// and that are not among $2...: those of models whose path changed or that
// left the node, which no prefetch would resume. It prints "removed PATH"
// for each and keeps the rest in the ledger. Only files ending in .part
// are touched.
const scriptSweepPartials = `ledger=$1
shift
[ -f "$ledger" ] || exit 0
: > "$ledger.tmp"
while IFS= read -r p; do
  keep=0
  for k in "$@"; do if [ "$p" = "$k" ]; then keep=1; fi; done
  case $p in *.part) ;; *) continue ;; esac
  if [ "$keep" = 1 ]; then
    printf '%s\n' "$p" >> "$ledger.tmp"
  elif [ -e "$p" ]; then
    rm -f -- "$p" && echo "removed $p"
  fi
done < "$ledger"
mv -f "$ledger.tmp" "$ledger"
`

// scriptRemoteCopy copies host:path $2 into file $1 with the node's own
// SSH access: rsync resumes what is there, scp starts over. The "./" keeps
// a destination from reading as an option or a host.
const scriptRemoteCopy = `case $1 in /*) dst=$1 ;; *) dst=./$1 ;; esac
if command -v rsync >/dev/null 2>&1; then
  exec rsync --partial --append-verify -e "ssh -o BatchMode=yes" -- "$2" "$dst"
fi
exec scp -B -q -- "$2" "$dst"
`

// shArgv is the argv running program with positional parameters args.
func shArgv(program string, args ...string) []string {
	return append([]string{"sh", "-c", program, "sh"}, args...)
}
