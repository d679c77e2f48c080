"""The Weaviate backend (extra ``[weaviate]``): ``WeaviateStore`` and client helpers.

Importing this package never needs weaviate-client; building a store or a client without it raises
``MissingDependency`` naming the extra. See ``README.md`` here for running it in production.
"""

from .client import connect_cloud, connect_custom, connect_local, connect_url, is_transient
from .core import tenant_name
from .schema import SCHEMA_VERSION
from .store import WeaviateStore

__all__ = [
    "SCHEMA_VERSION",
    "WeaviateStore",
    "connect_cloud",
    "connect_custom",
    "connect_local",
    "connect_url",
    "is_transient",
    "tenant_name",
]
