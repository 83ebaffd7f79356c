# Build the Windows downloads (NOT RUN in this repository's own environment: it has no Windows; the
# installers workflow runs it on a windows-2022 runner). From a checkout, in PowerShell:
#
#   pip install '.[installer]'; pwsh packaging/windows/build.ps1
#   -> dist/ModelDesk-VERSION-setup-x64.exe (Inno Setup) and dist/modeldesk-VERSION-windows-x64.zip
#
# Needs Inno Setup 6 (ISCC.exe; preinstalled on GitHub's Windows runners, else `choco install innosetup`).
# Signing: set SIGN_CERT_PFX (path) and SIGN_CERT_PASSWORD to sign the executables and the installer.
param([string]$Python = "python")
$ErrorActionPreference = "Stop"
$Root = (Resolve-Path "$PSScriptRoot\..\..").Path
Set-Location $Root
$Work = "$Root\build\installer"
$Dist = "$Root\dist"

function Invoke-Checked([string]$What, [scriptblock]$Block) {
    & $Block
    if ($LASTEXITCODE -ne 0) { throw "$What failed with exit code $LASTEXITCODE" }
}

$Version = (& $Python -c "import sys; sys.path.insert(0, 'packaging'); import collect; print(collect.version())").Trim()
Invoke-Checked "PyInstaller install" { & $Python -m pip install -q "pyinstaller>=6.6" }

Write-Host "== regular install of modeldesk"
Remove-Item -Recurse -Force "$Work\site", "$Root\build\lib" -ErrorAction SilentlyContinue
New-Item -ItemType Directory -Force $Work, $Dist | Out-Null
Invoke-Checked "pip install" { & $Python -m pip install -q --no-deps --target "$Work\site" $Root }

Write-Host "== icons"
Invoke-Checked "icons" { & $Python packaging\make_icons.py --out "$Work\icons" --png 256 --ico }

Write-Host "== PyInstaller one-folder build"
$env:PYTHONPATH = "$Work\site"
$env:MODELDESK_SITE = "$Work\site"
$env:MODELDESK_ICONS = "$Work\icons"
$env:QT_QPA_PLATFORM = "offscreen"
Invoke-Checked "PyInstaller" { & $Python -m PyInstaller --noconfirm --clean --log-level WARN `
    --distpath "$Work\dist" --workpath "$Work\pyinstaller" packaging\modeldesk.spec }
Remove-Item Env:PYTHONPATH
$App = "$Work\dist\modeldesk"
Invoke-Checked "version check" { & "$App\modeldesk.exe" --version }

if ($env:SIGN_CERT_PFX) {
    Write-Host "== signing the executables"
    Invoke-Checked "signtool" { signtool sign /f $env:SIGN_CERT_PFX /p $env:SIGN_CERT_PASSWORD /fd SHA256 `
        /tr http://timestamp.digicert.com /td SHA256 "$App\modeldesk.exe" "$App\modeldeskw.exe" }
}

Write-Host "== installer (Inno Setup)"
$Iscc = Join-Path ${env:ProgramFiles(x86)} "Inno Setup 6\ISCC.exe"
if (-not (Test-Path $Iscc)) { $Iscc = "ISCC.exe" }
Invoke-Checked "ISCC" { & $Iscc /Q "/DAppVersion=$Version" "/DSourceDir=$App" "/DOutputDir=$Dist" `
    "/DIconFile=$Work\icons\modeldesk.ico" packaging\windows\modeldesk.iss }
$Setup = "$Dist\ModelDesk-$Version-setup-x64.exe"
if ($env:SIGN_CERT_PFX) {
    Invoke-Checked "signtool" { signtool sign /f $env:SIGN_CERT_PFX /p $env:SIGN_CERT_PASSWORD /fd SHA256 `
        /tr http://timestamp.digicert.com /td SHA256 $Setup }
}

Write-Host "== portable zip"
$Zip = "$Dist\modeldesk-$Version-windows-x64.zip"
Remove-Item -Force $Zip -ErrorAction SilentlyContinue
Compress-Archive -Path $App -DestinationPath $Zip -CompressionLevel Optimal

Get-Item $Setup, $Zip | Format-Table Name, @{n="MB"; e={[math]::Round($_.Length / 1MB, 1)}}
& $Python packaging\sizes.py $App --top 12
