"""Blocklist subscriptions and safe-search: lists of blocked names fetched from
URLs the household adds, stored under the state dir, refreshed daily and handed to
homework-dnsd; safe-search makes the search engines answer with their filtered hosts."""
from .component import BlocklistsComponent

COMPONENT = BlocklistsComponent
