"""Where a Harbor task runs besides the host sandbox: the container backend (``container``, ``container_image``)."""
