; Inno Setup 6 script for ModelDesk (NOT RUN in this repository's own environment; see build.ps1).
; Per-user install by default (no administrator needed), Start menu entry, optional desktop icon and
; PATH entry. Installing a newer version over an older one replaces the program files only; the
; workspace (%LOCALAPPDATA%\ModelDesk\workspace) is never touched, and uninstalling leaves it too.

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\build\installer\dist\modeldesk"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#ifndef IconFile
  #define IconFile "..\..\build\installer\icons\modeldesk.ico"
#endif

[Setup]
AppId={{6C1B7E7E-4D0B-4C39-9E3A-5B0A3D1D9F21}
AppName=ModelDesk
AppVersion={#AppVersion}
AppVerName=ModelDesk {#AppVersion}
AppPublisher=ModelDesk
DefaultDirName={autopf}\ModelDesk
DefaultGroupName=ModelDesk
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=ModelDesk-{#AppVersion}-setup-x64
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\modeldeskw.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesEnvironment=yes
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; Flags: unchecked
Name: "addtopath"; Description: "Add the modeldesk command to PATH"; Flags: unchecked

[InstallDelete]
; A new version must not run with libraries left over from the old one.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\ModelDesk"; Filename: "{app}\modeldeskw.exe"
Name: "{autodesktop}\ModelDesk"; Filename: "{app}\modeldeskw.exe"; Tasks: desktopicon

[Registry]
Root: HKA; Subkey: "{code:EnvironmentKey}"; ValueType: expandsz; ValueName: "Path"; \
    ValueData: "{olddata};{app}"; Tasks: addtopath; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\modeldeskw.exe"; Description: "Start ModelDesk"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Only the program folder. The user's workspace lives elsewhere and stays.
Type: filesandordirs; Name: "{app}"

[Code]
function EnvironmentKey(Param: String): String;
begin
  if IsAdminInstallMode then
    Result := 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
  else
    Result := 'Environment';
end;

function NeedsAddPath(Dir: String): Boolean;
var
  Paths: String;
  RootKey: Integer;
begin
  if IsAdminInstallMode then RootKey := HKEY_LOCAL_MACHINE else RootKey := HKEY_CURRENT_USER;
  if not RegQueryStringValue(RootKey, EnvironmentKey(''), 'Path', Paths) then
  begin
    Result := True;
    exit;
  end;
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Paths) + ';') = 0;
end;
