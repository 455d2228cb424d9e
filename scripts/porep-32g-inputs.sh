# Sourced by the device scripts that prove 32 GiB PoRep C2 through a daemon
# (h200-devices.sh, h200-scaling.sh): porep32_inputs makes, unless present under $work, a
# virtual 32 GiB sector ($work/sector/porep.request.json) and the porep-32g parameter file
# ($work/params-files, about 45 GB; `params generate` skips a file already there), logging
# into $out. It needs $bin, $work, $out and a `note` function; on failure it notes why and
# returns 1.
porep32_inputs() {
  params="$work/params-files"
  if [ ! -f "$work/sector/porep.request.json" ] &&
    ! "$bin" fixtures --virtual --sector-size 32GiB --kinds porep --out "$work/sector" --seed 1 \
      > "$out/fixtures.txt" 2>&1; then
    note "fixtures FAILED"; return 1
  fi
  env -u FIL_PROOFS_PARAMETER_CACHE "$bin" params generate --circuit porep-32g --params-dir "$params" \
    > "$out/params.txt" 2>&1 || { note "params FAILED: $(tail -n 3 "$out/params.txt")"; return 1; }
}
