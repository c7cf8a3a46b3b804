"""The calls of a recorded landscape's samples file (`ccltune-bench --mode landscape`, PREFIX.samples, or the simulated
NCCL's `simnccl-fit-noise --simulate` output; bench/landscape.hpp): one line per timed call, `collective bytes config
round pos seq min_us max_us ran`, min/max over ranks of the call's time, `pos` the config's position in its round,
`seq` the call's position among its block's timed calls, `ran` what NCCL really ran for the config (or `?`).
Shared by the bench scripts that read such files; standard-library Python only."""
import collections

Sample = collections.namedtuple("Sample", "coll bytes config round pos seq min_us max_us ran")


def read_samples(path):
    """The file's calls as Samples in file order (bytes, round, pos and seq ints, min_us and max_us floats); comment
    (`#`) and blank lines, and a bare `collective ...` header line, skipped."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#") or line.startswith("collective"):
                continue
            coll, nbytes, config, rnd, pos, seq, lo, hi, ran = line.split()
            out.append(Sample(coll, int(nbytes), config, int(rnd), int(pos), int(seq), float(lo), float(hi), ran))
    return out
