"""The TOML config file as a settings source (pydantic-settings' TOML source), with one line for each way it can be
wrong: missing, not UTF-8, not TOML, nested past the parser's depth, or a key that is no setting; the endpoint URL
type; and the line for an ``AVI_*`` value that pydantic-settings cannot parse (a table setting not given as JSON)."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, get_args
from urllib.parse import urlsplit

from pydantic import AfterValidator
from pydantic_settings import BaseSettings, TomlConfigSettingsSource

from avi.errors import InputError
from avi.input_paths import check_input_path


class ConfigFileSource(TomlConfigSettingsSource):
    """The config file (``--config``, ``$AVI_CONFIG`` or ``./avi.toml``) as a settings source.

    Raises:
        InputError: the file is missing, cannot be opened or read, is not UTF-8 (names the first bad byte and
            its offset), is not TOML, is nested too deeply, or has a key that is no setting (names the key and
            the nearest setting name).
    """

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None):
        self.path = path
        if path is not None:
            check_input_path(path, "the config file")
            if not path.is_file():
                raise InputError(f"config file not found: {path}")
        self._fields = settings_cls.model_fields
        super().__init__(settings_cls, toml_file=path)

    def _read_file(self, file_path: Path) -> dict[str, Any]:
        try:
            data = super()._read_file(file_path)
        except UnicodeDecodeError as exc:
            byte = exc.object[exc.start:exc.start + 1]
            raise InputError(f"config file {file_path} is not UTF-8 text (byte 0x{byte.hex()} at offset "
                             f"{exc.start}); save it as UTF-8") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"config file {file_path} is not valid TOML: {exc}") from None
        except RecursionError:
            raise InputError(f"config file {file_path} is nested too deeply to read") from None
        except OSError as exc:
            raise InputError(f"cannot read config file {file_path}: {exc.strerror or exc}") from None
        for key, value in data.items():
            if key not in self._fields:
                near = difflib.get_close_matches(key, list(self._fields), n=1)
                hint = f"; did you mean '{near[0]}'?" if near else " (keys are setting names; see avi.example.toml)"
                raise InputError(f"config file {file_path}: unknown key '{key}'{hint}")
            ann = self._fields[key].annotation
            if isinstance(value, str) and (ann is Path or Path in get_args(ann)):
                # a relative path in the file is relative to the file, not to the working directory
                data[key] = str((Path(file_path).parent / Path(value).expanduser()).resolve())
        return data


def _endpoint_url(value: str | None) -> str | None:
    """An endpoint setting as urllib reads it: ``http(s)://HOST[:PORT]/...``.

    Raises:
        ValueError: a malformed IPv6 literal (``http://[::1/v1``), a port that is not a number in 0..65535, another
            scheme or no host (pydantic turns it into one line naming the setting, exit 2).
    """
    if value is None:
        return None
    try:
        parts = urlsplit(value)  # ValueError: "Invalid IPv6 URL"
        parts.port  # noqa: B018 - ValueError for a port that is no number or out of range
    except ValueError as exc:
        raise ValueError(f"{value} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
    return value


EndpointUrl = Annotated[str | None, AfterValidator(_endpoint_url)]


def settings_error_line(exc: Exception) -> str:
    """One line for pydantic-settings' ``SettingsError`` ("error parsing value for field "serve" from source
    "EnvSettingsSource""): the environment variable, that it must be JSON, and the parser's complaint."""
    m = re.search(r'field "(\w+)" from source "(\w+)"', str(exc))
    field, source = (m.group(1), m.group(2)) if m else ("?", "?")
    env = next((k for k in os.environ if k.upper() == f"AVI_{field.upper()}"), None)
    where = f"${env}" if env and source.startswith("Env") else f"setting '{field}'"
    cause = exc.__cause__ or exc.__context__
    why = f" ({' '.join(str(cause).split())[:120]})" if cause else ""
    return f"{where} is not valid JSON{why}: '{field}' is a table or list, so its AVI_* value must be JSON"
