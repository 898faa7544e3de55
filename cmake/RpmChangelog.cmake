# SPDX-License-Identifier: MIT
# The RPM %changelog from packaging/debian/changelog, the one source of the release notes
# (issue 35). Debian's format (deb-changelog(5)): `PACKAGE (VERSION) DISTS; urgency=U`, change
# lines `  * text` continued by `    text`, and the trailer ` -- NAME <EMAIL>  DAY, DD MON YYYY
# HH:MM:SS +ZZZZ` (RFC 5322 date). RPM's (rpm's spec %changelog, Fedora packaging guidelines):
# `* DAY MON DD YYYY NAME <EMAIL> - VERSION-RELEASE` then `- text` lines. Newest entry first in
# both. Usage: cmake -DIN=debian/changelog -DOUT=rpm-changelog -P RpmChangelog.cmake
file(STRINGS "${IN}" lines)
set(out "")
set(version "")
set(items "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[a-z0-9][a-z0-9.+-]* \\(([^)]+)\\) ")
    set(version "${CMAKE_MATCH_1}")
    set(items "")
  elseif(line MATCHES "^  \\* (.*)$")
    string(APPEND items "- ${CMAKE_MATCH_1}\n")
  elseif(line MATCHES "^    +(.*)$" AND NOT items STREQUAL "")
    # A continuation joins the change line it continues (RPM wraps nothing).
    string(REGEX REPLACE "\n$" " ${CMAKE_MATCH_1}\n" items "${items}")
  elseif(line MATCHES "^ -- (.+ <[^>]+>)  ([A-Z][a-z][a-z]), ([0-9]+) ([A-Z][a-z][a-z]) ([0-9]+) ")
    if(version STREQUAL "")
      message(FATAL_ERROR "${IN}: a trailer without an entry: ${line}")
    endif()
    set(who "${CMAKE_MATCH_1}")
    set(weekday "${CMAKE_MATCH_2}")
    set(day "${CMAKE_MATCH_3}")
    set(month "${CMAKE_MATCH_4}")
    set(year "${CMAKE_MATCH_5}")
    if(day MATCHES "^[0-9]$")
      set(day "0${day}")
    endif()
    # Debian versions carry no release; the RPM's is 1 (CPACK_RPM_PACKAGE_RELEASE's default).
    string(APPEND out "* ${weekday} ${month} ${day} ${year} ${who} - ${version}-1\n${items}\n")
    set(version "")
  elseif(NOT line STREQUAL "" AND NOT line MATCHES "^ *$")
    message(FATAL_ERROR "${IN}: not a deb-changelog(5) line: ${line}")
  endif()
endforeach()
string(REGEX REPLACE "\n+$" "\n" out "${out}")
if(out STREQUAL "")
  message(FATAL_ERROR "${IN}: no entry")
endif()
file(WRITE "${OUT}" "${out}")
